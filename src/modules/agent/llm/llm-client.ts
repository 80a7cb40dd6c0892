import type { ModelToolCall } from '../agent-run.types.js';

/** Chat Completions message, as the OpenAI-compatible wire format has it. */
export type ChatMessage =
  | { role: 'system' | 'user'; content: string }
  | {
      role: 'assistant';
      content: string | null;
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[];
    }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface OfferedTool {
  name: string;
  description: string;
  /** The tool's JSON Schema (from the registry). */
  parameters: Record<string, unknown>;
}

export interface CompletionRequest {
  messages: ChatMessage[];
  tools: OfferedTool[];
  /** Aborted on cancel, run timeout or step timeout; the client stops at once. */
  signal: AbortSignal;
  /** Project the run belongs to (the offline agent scopes its searches to it). */
  projectId: string;
}

export interface Completion {
  content: string | null;
  toolCalls: ModelToolCall[];
}

/** Whatever drives the tool loop: an OpenAI-compatible model, or the offline retrieval agent. */
export interface LlmClient {
  /** Recorded on the run: `openai` or `offline-retrieval`. */
  readonly provider: string;
  readonly model: string;
  complete(request: CompletionRequest): Promise<Completion>;
}

export const LLM_CLIENT = Symbol('LLM_CLIENT');

/** A failure with a reason fit to show on the run (`error`). */
export class LlmError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean = false,
  ) {
    super(message);
    this.name = 'LlmError';
  }
}
