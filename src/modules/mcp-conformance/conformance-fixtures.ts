import { Injectable, OnModuleInit } from '@nestjs/common';
import {
  inputRequired,
  MissingRequiredClientCapabilityError,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import {
  ErrorCode as JsonRpcErrorCode,
  McpError,
  type CallToolResult,
  type GetPromptResult,
  type Prompt,
  type ReadResourceResult,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import { randomUUID } from 'node:crypto';
import type { KeyCaller } from '../api-keys/key-caller.js';
import {
  McpExtensions,
  type McpExtension,
  type McpExtensionRequest,
  type McpToolAnswer,
} from '../tools/server-extensions.js';
import { TINY_PNG_BASE64, TINY_WAV_BASE64 } from './fixture-media.js';

/** Fixture tools take no arguments; the suite lists them and calls them by name. */
const NO_ARGUMENTS = { type: 'object', properties: {} } as const;

const text = (value: string): CallToolResult => ({ content: [{ type: 'text', text: value }] });
const pause = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** An elicitation form asking for one string field. */
const askFor = (message: string, field: string, type: 'string' | 'boolean' = 'string') =>
  inputRequired.elicit({
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type } as never }, required: [field] },
  });

/** The accepted content of an elicitation answer, field by field (the client's input, untrusted). */
function answered(responses: Record<string, unknown> | undefined, key: string, field: string): unknown {
  const answer = responses?.[key] as { action?: unknown; content?: Record<string, unknown> } | undefined;
  return answer?.content?.[field];
}

/** An answered value as the text a fixture echoes back. */
function asText(value: unknown): string {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : JSON.stringify(value);
}

interface FixtureTool {
  description: string;
  /** The 2025-era call sends messages before its result (SSE answer). */
  streams?: boolean;
  inputSchema?: Tool['inputSchema'];
  /** Only on 2026-07-28 (multi-round-trip and stateless diagnostics). */
  modernOnly?: boolean;
  run(request: McpExtensionRequest, args: Record<string, unknown>): Promise<McpToolAnswer>;
}

/**
 * The fixtures of the official MCP conformance suite (`@modelcontextprotocol/conformance`): the tools, resources,
 * prompts and completions its server scenarios call by name, with the behaviour each scenario checks. They are test
 * doubles served on the real endpoint, so the suite exercises Atrium's transport, authentication, rate limit and
 * pipeline; this module is loaded only with MCP_CONFORMANCE_FIXTURES=true (refused in production), and the extra
 * capabilities (logging, subscriptions) exist only here.
 */
@Injectable()
export class ConformanceFixtures implements McpExtension, OnModuleInit {
  private readonly fixtureTools: Record<string, FixtureTool> = {
    test_simple_text: {
      description: 'Answers one text block',
      run: async () => text('This is a simple text response for testing.'),
    },
    test_image_content: {
      description: 'Answers an image block',
      run: async () => ({ content: [{ type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' }] }),
    },
    test_audio_content: {
      description: 'Answers an audio block',
      run: async () => ({ content: [{ type: 'audio', data: TINY_WAV_BASE64, mimeType: 'audio/wav' }] }),
    },
    test_embedded_resource: {
      description: 'Answers an embedded resource',
      run: async () => ({
        content: [
          {
            type: 'resource',
            resource: {
              uri: 'test://embedded-resource',
              mimeType: 'text/plain',
              text: 'This is an embedded resource content.',
            },
          },
        ],
      }),
    },
    test_multiple_content_types: {
      description: 'Answers text, an image and an embedded resource',
      run: async () => ({
        content: [
          { type: 'text', text: 'Multiple content types test:' },
          { type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: {
              uri: 'test://mixed-content-resource',
              mimeType: 'application/json',
              text: JSON.stringify({ test: 'data', value: 123 }),
            },
          },
        ],
      }),
    },
    test_tool_with_logging: {
      description: 'Sends three log messages before its result',
      streams: true,
      run: async (request) => {
        for (const data of ['Tool execution started', 'Tool processing data', 'Tool execution completed']) {
          await request.notify({
            method: 'notifications/message',
            params: { level: 'info', logger: 'conformance', data },
          });
          await pause(20);
        }
        return text('Tool with logging executed successfully');
      },
    },
    test_tool_with_progress: {
      description: 'Sends three progress notifications before its result',
      streams: true,
      run: async (request) => {
        const progressToken = request.meta?.progressToken;
        if (progressToken !== undefined) {
          for (const progress of [0, 50, 100]) {
            await request.notify({
              method: 'notifications/progress',
              params: { progressToken, progress, total: 100, message: `Completed ${progress} of 100` },
            });
            await pause(20);
          }
        }
        return text(
          typeof progressToken === 'string' || typeof progressToken === 'number'
            ? String(progressToken)
            : 'no progress token',
        );
      },
    },
    test_error_handling: {
      description: 'Fails on purpose (an isError result)',
      run: async () => ({
        content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
        isError: true,
      }),
    },
    test_sampling: {
      description: 'Asks the client to sample (2025-era session)',
      streams: true,
      inputSchema: {
        type: 'object',
        properties: { prompt: { type: 'string', description: 'What to ask the model' } },
        required: ['prompt'],
      },
      run: async (request, args) => {
        const result = await this.askClient(request, 'sampling/createMessage', {
          messages: [
            {
              role: 'user',
              content: { type: 'text', text: typeof args.prompt === 'string' ? args.prompt : 'Say hello' },
            },
          ],
          maxTokens: 100,
        });
        const content = result.content as { text?: unknown } | undefined;
        return text(`LLM response: ${typeof content?.text === 'string' ? content.text : 'no response'}`);
      },
    },
    test_elicitation: {
      description: 'Asks the user for a response (2025-era session)',
      streams: true,
      inputSchema: {
        type: 'object',
        properties: { message: { type: 'string', description: 'What to show the user' } },
        required: ['message'],
      },
      run: async (request, args) => {
        const result = await this.askClient(request, 'elicitation/create', {
          message: typeof args.message === 'string' ? args.message : 'Please respond',
          requestedSchema: {
            type: 'object',
            properties: { response: { type: 'string', description: 'Your response' } },
            required: ['response'],
          },
        });
        return text(`User response: action=${String(result.action)}, content=${JSON.stringify(result.content ?? {})}`);
      },
    },
    test_elicitation_sep1034_defaults: {
      description: 'Asks with a default for every primitive type (SEP-1034)',
      streams: true,
      run: async (request) => {
        const result = await this.askClient(request, 'elicitation/create', {
          message: 'Please review the form; every field has a default',
          requestedSchema: {
            type: 'object',
            properties: {
              name: { type: 'string', description: 'User name', default: 'John Doe' },
              age: { type: 'integer', description: 'User age', default: 30 },
              score: { type: 'number', description: 'User score', default: 95.5 },
              status: {
                type: 'string',
                description: 'User status',
                enum: ['active', 'inactive', 'pending'],
                default: 'active',
              },
              verified: { type: 'boolean', description: 'Verification status', default: true },
            },
            required: [],
          },
        });
        return text(
          `Elicitation completed: action=${String(result.action)}, content=${JSON.stringify(result.content ?? {})}`,
        );
      },
    },
    test_elicitation_sep1330_enums: {
      description: 'Asks with the five enum forms (SEP-1330)',
      streams: true,
      run: async (request) => {
        const choices = (prefix: string, titles: string[]) =>
          titles.map((title, i) => ({ const: `${prefix}${i + 1}`, title }));
        const result = await this.askClient(request, 'elicitation/create', {
          message: 'Please pick from each list',
          requestedSchema: {
            type: 'object',
            properties: {
              untitledSingle: { type: 'string', description: 'Pick one', enum: ['option1', 'option2', 'option3'] },
              titledSingle: {
                type: 'string',
                description: 'Pick one (titled)',
                oneOf: choices('value', ['First Option', 'Second Option', 'Third Option']),
              },
              legacyEnum: {
                type: 'string',
                description: 'Pick one (legacy titles)',
                enum: ['opt1', 'opt2', 'opt3'],
                enumNames: ['Option One', 'Option Two', 'Option Three'],
              },
              untitledMulti: {
                type: 'array',
                description: 'Pick several',
                minItems: 1,
                maxItems: 3,
                items: { type: 'string', enum: ['option1', 'option2', 'option3'] },
              },
              titledMulti: {
                type: 'array',
                description: 'Pick several (titled)',
                minItems: 1,
                maxItems: 3,
                items: { anyOf: choices('value', ['First Choice', 'Second Choice', 'Third Choice']) },
              },
            },
            required: [],
          },
        });
        return text(
          `Elicitation completed: action=${String(result.action)}, content=${JSON.stringify(result.content ?? {})}`,
        );
      },
    },
    json_schema_2020_12_tool: {
      description: 'A tool whose input schema uses JSON Schema 2020-12 features',
      run: async (_request, args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
    },
    test_missing_capability: {
      description: 'Needs the client to declare sampling',
      modernOnly: true,
      run: async (request) => {
        if (!request.clientCapabilities?.sampling)
          throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
        return text('Success');
      },
    },
    test_streaming_elicitation: {
      description: 'Streams a progress notification before its result',
      modernOnly: true,
      run: async (request) => {
        await request.notify({
          method: 'notifications/progress',
          params: { progressToken: 'conformance-stream', progress: 50, total: 100 },
        });
        return text('Streaming complete');
      },
    },
    test_logging_tool: {
      description: 'Logs only when the request asked for a log level',
      modernOnly: true,
      run: async (request) => {
        if (request.logLevel)
          await request.notify({
            method: 'notifications/message',
            params: { level: 'info', data: 'Diagnostic trace logging activated' },
          });
        return text('Logging evaluated');
      },
    },
    test_input_required_result_elicitation: {
      description: 'Asks the user for a name (multi-round-trip)',
      modernOnly: true,
      run: async (request) => {
        const name = answered(request.inputResponses, 'user_name', 'name');
        if (name !== undefined) return text(`Hello, ${asText(name)}!`);
        return inputRequired({ inputRequests: { user_name: askFor('What is your name?', 'name') } });
      },
    },
    test_input_required_result_sampling: {
      description: 'Asks the client to sample (multi-round-trip)',
      modernOnly: true,
      run: async (request) => {
        const sample = request.inputResponses?.sample_request as { content?: { text?: unknown } } | undefined;
        if (sample)
          return text(
            `Sampling result: ${typeof sample.content?.text === 'string' ? sample.content.text : 'no response'}`,
          );
        return inputRequired({
          inputRequests: {
            sample_request: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }],
              maxTokens: 100,
            }),
          },
        });
      },
    },
    test_input_required_result_list_roots: {
      description: 'Asks the client for its roots (multi-round-trip)',
      modernOnly: true,
      run: async (request) => {
        const roots = request.inputResponses?.roots_request as { roots?: unknown } | undefined;
        if (roots) return text(`Found ${Array.isArray(roots.roots) ? roots.roots.length : 0} root(s)`);
        return inputRequired({ inputRequests: { roots_request: inputRequired.listRoots() } });
      },
    },
    test_input_required_result_request_state: {
      description: 'Carries requestState across a round',
      modernOnly: true,
      run: async (request) => {
        const state = request.requestState as { kind?: string } | undefined;
        if (state?.kind === 'request-state' && answered(request.inputResponses, 'confirm', 'ok') === true)
          return text('state-ok: requestState validated');
        return inputRequired({
          inputRequests: { confirm: askFor('Please confirm', 'ok', 'boolean') },
          requestState: await this.mint(request, { kind: 'request-state' }),
        });
      },
    },
    test_input_required_result_multiple_inputs: {
      description: 'Asks three things at once',
      modernOnly: true,
      run: async (request) => {
        const state = request.requestState as { kind?: string } | undefined;
        const responses = request.inputResponses;
        if (state?.kind === 'multiple-inputs' && responses?.user_name && responses.greeting && responses.client_roots) {
          const greeting = (responses.greeting as { content?: { text?: unknown } }).content?.text;
          const roots = (responses.client_roots as { roots?: unknown }).roots;
          return text(
            `Name: ${String(answered(responses, 'user_name', 'name'))}; Greeting: ${typeof greeting === 'string' ? greeting : 'Hello there!'}; Roots: ${Array.isArray(roots) ? roots.length : 0}`,
          );
        }
        return inputRequired({
          inputRequests: {
            user_name: askFor('What is your name?', 'name'),
            greeting: inputRequired.createMessage({
              messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }],
              maxTokens: 50,
            }),
            client_roots: inputRequired.listRoots(),
          },
          requestState: await this.mint(request, { kind: 'multiple-inputs' }),
        });
      },
    },
    test_input_required_result_multi_round: {
      description: 'Asks in two rounds',
      modernOnly: true,
      run: async (request) => {
        const state = request.requestState as { round?: number; name?: string } | undefined;
        if (state?.round === 1 && request.inputResponses?.step1) {
          const name = String(answered(request.inputResponses, 'step1', 'name'));
          return inputRequired({
            inputRequests: { step2: askFor('Step 2: What is your favorite color?', 'color') },
            requestState: await this.mint(request, { round: 2, name }),
          });
        }
        if (state?.round === 2 && request.inputResponses?.step2) {
          return text(
            `Multi-round complete for ${state.name ?? 'friend'} who likes ${String(answered(request.inputResponses, 'step2', 'color'))}`,
          );
        }
        return inputRequired({
          inputRequests: { step1: askFor('Step 1: What is your name?', 'name') },
          requestState: await this.mint(request, { round: 1 }),
        });
      },
    },
    test_input_required_result_tampered_state: {
      description: 'Rejects a requestState that fails verification',
      modernOnly: true,
      run: async (request) => {
        // A tampered state never gets here: the server's requestState verification answers it with an error.
        const state = request.requestState as { kind?: string } | undefined;
        if (state?.kind === 'tamper-test' && request.inputResponses?.confirm)
          return text('integrity-ok: state verified');
        return inputRequired({
          inputRequests: { confirm: askFor('Please confirm', 'ok', 'boolean') },
          requestState: await this.mint(request, { kind: 'tamper-test' }),
        });
      },
    },
    test_input_required_result_capabilities: {
      description: 'Asks only for what the client declared',
      modernOnly: true,
      run: async (request) => {
        if (request.inputResponses && Object.keys(request.inputResponses).length > 0) {
          return text(`capabilities-ok: received ${Object.keys(request.inputResponses).join(',')}`);
        }
        const inputRequests: Record<string, ReturnType<typeof inputRequired.listRoots>> = {};
        if (request.clientCapabilities?.elicitation) inputRequests.elicit_input = askFor('Elicitation input', 'value');
        if (request.clientCapabilities?.sampling) {
          inputRequests.sample_input = inputRequired.createMessage({
            messages: [{ role: 'user', content: { type: 'text', text: 'Sample request' } }],
            maxTokens: 50,
          });
        }
        if (Object.keys(inputRequests).length === 0) return text('No supported capabilities declared');
        return inputRequired({ inputRequests, requestState: await this.mint(request, { kind: 'capabilities-test' }) });
      },
    },
  };

  private readonly promptList: Prompt[] = [
    { name: 'test_simple_prompt', title: 'Simple Test Prompt', description: 'A prompt without arguments' },
    {
      name: 'test_prompt_with_arguments',
      title: 'Prompt With Arguments',
      description: 'A prompt with two required arguments',
      arguments: [
        { name: 'arg1', description: 'First test argument', required: true },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    },
    {
      name: 'test_prompt_with_embedded_resource',
      title: 'Prompt With Embedded Resource',
      description: 'A prompt that embeds a resource',
      arguments: [{ name: 'resourceUri', description: 'URI of the resource to embed', required: true }],
    },
    { name: 'test_prompt_with_image', title: 'Prompt With Image', description: 'A prompt with an image' },
  ];

  constructor(private readonly extensions: McpExtensions) {}

  onModuleInit(): void {
    this.extensions.register(this);
  }

  capabilities(): Record<string, object> {
    return { resources: { subscribe: true }, prompts: {}, completions: {}, logging: {} };
  }

  tools(_caller: KeyCaller): Tool[] {
    return Object.entries(this.fixtureTools).map(([name, tool]) => ({
      name,
      description: tool.description,
      inputSchema:
        name === 'json_schema_2020_12_tool'
          ? (JSON_SCHEMA_2020_12 as unknown as Tool['inputSchema'])
          : (tool.inputSchema ?? NO_ARGUMENTS),
    }));
  }

  ownsTool(name: string): boolean {
    return Object.hasOwn(this.fixtureTools, name);
  }

  streamsTool(name: string): boolean {
    return this.fixtureTools[name]?.streams === true;
  }

  callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    request: McpExtensionRequest,
  ): Promise<McpToolAnswer> | undefined {
    const tool = this.ownsTool(name) ? this.fixtureTools[name] : undefined;
    if (!tool) return undefined;
    if (tool.modernOnly && request.era !== 'modern')
      return Promise.reject(
        new McpError(JsonRpcErrorCode.InvalidParams, `${name} is served on revision 2026-07-28 only`),
      );
    return tool.run(request, args ?? {});
  }

  async listResources(): Promise<Resource[]> {
    return [
      {
        uri: 'test://static-text',
        name: 'static-text',
        title: 'Static Text Resource',
        description: 'A static text resource',
        mimeType: 'text/plain',
      },
      {
        uri: 'test://static-binary',
        name: 'static-binary',
        title: 'Static Binary Resource',
        description: 'A static image',
        mimeType: 'image/png',
      },
      {
        uri: 'test://watched-resource',
        name: 'watched-resource',
        title: 'Watched Resource',
        description: 'A resource one may subscribe to',
        mimeType: 'text/plain',
      },
    ];
  }

  listResourceTemplates(): ResourceTemplate[] {
    return [
      {
        uriTemplate: 'test://template/{id}/data',
        name: 'template',
        title: 'Resource Template',
        description: 'A template with one parameter',
        mimeType: 'application/json',
      },
    ];
  }

  async readResource(uri: string): Promise<ReadResourceResult | undefined> {
    if (uri === 'test://static-text')
      return { contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }] };
    if (uri === 'test://static-binary') return { contents: [{ uri, mimeType: 'image/png', blob: TINY_PNG_BASE64 }] };
    if (uri === 'test://watched-resource')
      return { contents: [{ uri, mimeType: 'text/plain', text: 'Watched resource content' }] };
    const template = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (template) {
      const id = decodeURIComponent(template[1]);
      return {
        contents: [
          {
            uri,
            mimeType: 'application/json',
            text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
          },
        ],
      };
    }
    return undefined;
  }

  async subscribe(): Promise<void> {
    // Nothing changes under the fixtures, so a subscription never fires; accepting it is what the scenario checks.
  }

  async setLogLevel(): Promise<void> {
    // The fixtures log only inside test_tool_with_logging; the level is accepted as the scenario checks.
  }

  prompts(request: McpExtensionRequest): Prompt[] {
    return request.era === 'modern' ? [...this.promptList, MRTR_PROMPT] : this.promptList;
  }

  getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    request: McpExtensionRequest,
  ): Promise<GetPromptResult | InputRequiredResult> | undefined {
    switch (name) {
      case MRTR_PROMPT.name: {
        if (request.era !== 'modern') return undefined;
        const context = answered(request.inputResponses, 'user_context', 'context');
        if (context !== undefined)
          return Promise.resolve({
            messages: [{ role: 'user', content: { type: 'text', text: `Prompt with context: ${asText(context)}` } }],
          });
        return Promise.resolve(
          inputRequired({ inputRequests: { user_context: askFor('What context should the prompt use?', 'context') } }),
        );
      }
      case 'test_simple_prompt':
        return Promise.resolve({
          messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
        });
      case 'test_prompt_with_arguments':
        return Promise.resolve({
          messages: [
            {
              role: 'user',
              content: {
                type: 'text',
                text: `Prompt with arguments: arg1='${args?.arg1 ?? ''}', arg2='${args?.arg2 ?? ''}'`,
              },
            },
          ],
        });
      case 'test_prompt_with_embedded_resource':
        return Promise.resolve({
          messages: [
            {
              role: 'user',
              content: {
                type: 'resource',
                resource: {
                  uri: args?.resourceUri ?? 'test://embedded',
                  mimeType: 'text/plain',
                  text: 'Embedded resource content for testing.',
                },
              },
            },
            { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
          ],
        });
      case 'test_prompt_with_image':
        return Promise.resolve({
          messages: [
            { role: 'user', content: { type: 'image', data: TINY_PNG_BASE64, mimeType: 'image/png' } },
            { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
          ],
        });
      default:
        return undefined;
    }
  }

  async complete(params: {
    ref: { type: string; name?: string; uri?: string };
  }): Promise<{ completion: { values: string[]; total: number; hasMore: boolean } } | undefined> {
    if (params.ref.type === 'ref/prompt' && this.promptList.some((prompt) => prompt.name === params.ref.name))
      return { completion: { values: [], total: 0, hasMore: false } };
    if (params.ref.type === 'ref/resource' && params.ref.uri === 'test://template/{id}/data')
      return { completion: { values: [], total: 0, hasMore: false } };
    return undefined;
  }

  wantsSession(capabilities: Record<string, unknown>): boolean {
    return typeof capabilities.sampling === 'object' && capabilities.sampling !== null;
  }

  private askClient(
    request: McpExtensionRequest,
    method: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    if (!request.askClient) {
      return Promise.reject(
        new McpError(
          JsonRpcErrorCode.InvalidRequest,
          `${method} needs a session: initialize declaring the capability first`,
        ),
      );
    }
    return request.askClient(method, params);
  }

  private mint(request: McpExtensionRequest, payload: Record<string, unknown>): Promise<string> {
    if (!request.mintState)
      return Promise.reject(new McpError(JsonRpcErrorCode.InternalError, 'requestState is a 2026-07-28 feature'));
    return request.mintState({ ...payload, nonce: randomUUID() });
  }
}

/** A prompt that needs the user's input first (multi-round-trip on a request other than tools/call). */
const MRTR_PROMPT: Prompt = {
  name: 'test_input_required_result_prompt',
  description: 'Asks the user for context before it answers',
};

/** SEP-1613 / SEP-2106: a tool input schema whose 2020-12 keywords must reach the client as written. */
const JSON_SCHEMA_2020_12 = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  $defs: {
    address: {
      $anchor: 'postalAddress',
      type: 'object',
      properties: { street: { type: 'string' }, city: { type: 'string' } },
    },
  },
  properties: {
    name: { type: 'string' },
    address: { $ref: '#/$defs/address' },
    contactMethod: { type: 'string', enum: ['phone', 'email'] },
    phone: { type: 'string' },
    email: { type: 'string' },
  },
  allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
  if: { properties: { contactMethod: { const: 'phone' } }, required: ['contactMethod'] },
  then: { required: ['phone'] },
  else: { required: ['email'] },
  additionalProperties: false,
} as const;
