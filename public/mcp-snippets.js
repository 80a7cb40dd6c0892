/**
 * The MCP client set-up snippets the account page shows after a key is created, in each client's own
 * format (README "MCP clients" has the same ones with placeholders). No DOM here: app.js renders them.
 */
export function mcpClientSnippets(mcpUrl, key) {
  const headers = { Authorization: `Bearer ${key}` };
  const json = (value) => JSON.stringify(value, null, 2);
  return [
    {
      id: 'vscode',
      label: 'VS Code',
      where: 'Put this in .vscode/mcp.json of a workspace, or run "MCP: Open User Configuration".',
      text: json({ servers: { atrium: { type: 'http', url: mcpUrl, headers } } }),
    },
    {
      id: 'claude-code',
      label: 'Claude Code (command)',
      where: 'Run this in a shell.',
      text: `claude mcp add --transport http atrium ${mcpUrl} --header "Authorization: Bearer ${key}"`,
    },
    {
      id: 'claude-code-json',
      label: 'Claude Code (.mcp.json)',
      where: 'Put this in .mcp.json of a project; Claude Code expands ${ATRIUM_API_KEY} from the environment, so export the key there and the file holds no secret.',
      text: json({ mcpServers: { atrium: { type: 'http', url: mcpUrl, headers: { Authorization: 'Bearer ${ATRIUM_API_KEY}' } } } }),
    },
    {
      id: 'cursor',
      label: 'Cursor',
      where: 'Put this in ~/.cursor/mcp.json, or .cursor/mcp.json of a project.',
      text: json({ mcpServers: { atrium: { url: mcpUrl, headers } } }),
    },
    {
      id: 'openai',
      label: 'OpenAI Responses API',
      where: 'The "mcp" tool of a Responses API request. OpenAI\'s servers make the calls, so this address must be reachable from the internet over HTTPS.',
      text: json({ type: 'mcp', server_label: 'atrium', server_url: mcpUrl, headers, require_approval: 'never' }),
    },
  ];
}
