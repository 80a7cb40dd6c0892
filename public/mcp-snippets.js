/**
 * The MCP client set-up snippets the account page shows after a key is created, in each client's own
 * format (README "MCP clients" has the same ones). No DOM here: app.js renders them.
 *
 * None of them holds the key: a configuration file is copied, synced and committed, and a key in it leaks
 * with it. VS Code asks for the key with a password prompt (an `inputs` entry) and keeps it in its secret
 * storage; the other clients read it from the environment variable KEY_VARIABLE when they connect.
 */
export const KEY_VARIABLE = 'ATRIUM_API_KEY';

/** The id of VS Code's prompt for the key (`${input:…}`). */
export const VSCODE_INPUT_ID = 'atrium-api-key';

/**
 * How to put the key into KEY_VARIABLE without writing it anywhere: `read -s` asks for it without echoing it
 * and keeps it out of the shell history; the client is then started from that shell.
 */
export const SET_KEY_VARIABLE = `read -rs ${KEY_VARIABLE} && export ${KEY_VARIABLE}`;

export function mcpClientSnippets(mcpUrl) {
  const json = (value) => JSON.stringify(value, null, 2);
  const fromEnv = `Bearer \${${KEY_VARIABLE}}`;
  return [
    {
      id: 'vscode',
      label: 'VS Code',
      where: 'Put this in .vscode/mcp.json of a workspace, or run "MCP: Open User Configuration". VS Code asks for the key once, in a password prompt, and keeps it in its secret storage, not in the file.',
      usesEnv: false,
      text: json({
        inputs: [{ type: 'promptString', id: VSCODE_INPUT_ID, description: 'Atrium API key', password: true }],
        servers: { atrium: { type: 'http', url: mcpUrl, headers: { Authorization: `Bearer \${input:${VSCODE_INPUT_ID}}` } } },
      }),
    },
    {
      id: 'claude-code',
      label: 'Claude Code (command)',
      where: `Run this in a shell. The single quotes keep \${${KEY_VARIABLE}} as written in Claude Code's configuration; Claude Code reads the key from the environment each time it connects.`,
      usesEnv: true,
      text: `claude mcp add --transport http atrium ${mcpUrl} --header 'Authorization: ${fromEnv}'`,
    },
    {
      id: 'claude-code-json',
      label: 'Claude Code (.mcp.json)',
      where: `Put this in .mcp.json of a project; Claude Code expands \${${KEY_VARIABLE}} from the environment, so the file can be committed.`,
      usesEnv: true,
      text: json({ mcpServers: { atrium: { type: 'http', url: mcpUrl, headers: { Authorization: fromEnv } } } }),
    },
    {
      id: 'cursor',
      label: 'Cursor',
      where: `Put this in ~/.cursor/mcp.json, or .cursor/mcp.json of a project; Cursor expands \${env:${KEY_VARIABLE}} from the environment it was started in.`,
      usesEnv: true,
      text: json({ mcpServers: { atrium: { url: mcpUrl, headers: { Authorization: `Bearer \${env:${KEY_VARIABLE}}` } } } }),
    },
    {
      id: 'openai',
      label: 'OpenAI Responses API',
      where: 'A Responses API request with the "mcp" tool; the shell fills in both keys from the environment. OpenAI\'s servers make the calls, so this address must be reachable from the internet over HTTPS.',
      usesEnv: true,
      text: [
        'curl https://api.openai.com/v1/responses -H "Authorization: Bearer $OPENAI_API_KEY" \\',
        "  -H 'Content-Type: application/json' -d @- <<EOF",
        json({
          model: 'gpt-4.1',
          tools: [{ type: 'mcp', server_label: 'atrium', server_url: mcpUrl, headers: { Authorization: `Bearer $${KEY_VARIABLE}` }, require_approval: 'never' }],
          input: 'Which of my tasks are overdue?',
        }),
        'EOF',
      ].join('\n'),
    },
  ];
}
