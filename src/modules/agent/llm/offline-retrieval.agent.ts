import type { ModelToolCall } from '../agent-run.types.js';
import { toolDataText } from '../agent-run.conversation.js';
import type { ChatMessage, Completion, CompletionRequest, LlmClient } from './llm-client.js';

const STOP_WORDS = new Set(
  'the and for are but not you all any can had her was one our out has have how its may new now old see two way who did get him his she too use what when where which while with this that from they them then than there their these those will would could should about into over some such only also just more most other your yours what why does doing done been being were is it of to in on at by an be as or if so do no a i me my we us'.split(
    ' ',
  ),
);
const PASSAGE_CHARS = 400;
const MAX_PASSAGES = 5;
const MAX_TASKS = 5;
const FALLBACK_DOCUMENTS = 3;

interface Hit {
  documentId: string;
  title: string;
  text: string;
  chunkIndex?: number;
  startOffset?: number;
  endOffset?: number;
}

/**
 * The agent used when no LLM is configured (LLM_PROVIDER=offline, the default). It is not a language
 * model and never says it is: it searches the run's project documents (`search_documents`, or
 * `list_documents` + `get_document` when search is not offered) and the caller's tasks (`search_tasks`)
 * for the input, through the same tool loop and permission checks as a model, then answers with the best
 * passages quoted and cited. Deterministic: the same visible data gives the same answer.
 */
export class OfflineRetrievalAgent implements LlmClient {
  readonly provider = 'offline-retrieval';
  readonly model = 'offline-retrieval';

  async complete(request: CompletionRequest): Promise<Completion> {
    request.signal.throwIfAborted();
    const input = firstUserMessage(request.messages);
    const offered = new Set(request.tools.map((tool) => tool.name));
    const results = toolResults(request.messages);
    const calls: ModelToolCall[] = [];
    const call = (name: string, args: Record<string, unknown>) =>
      calls.push({ id: `offline_${results.length + calls.length + 1}`, name, arguments: JSON.stringify(args) });

    if (results.length === 0) {
      if (offered.has('search_documents'))
        call('search_documents', { query: input.slice(0, 2000), project_id: request.projectId, limit: MAX_PASSAGES });
      else if (offered.has('list_documents')) call('list_documents', { project_id: request.projectId, limit: 50 });
      const keyword = keywords(input)[0];
      if (keyword && offered.has('search_tasks')) call('search_tasks', { query: keyword, limit: MAX_TASKS });
      if (calls.length > 0) return { content: null, toolCalls: calls };
    } else {
      const listed = results.find((r) => r.tool === 'list_documents');
      const fetched = results.some((r) => r.tool === 'get_document');
      if (listed && !fetched && offered.has('get_document') && Array.isArray(listed.value)) {
        for (const document of rankByTitle(listed.value as { id: string; title: string }[], keywords(input)).slice(
          0,
          FALLBACK_DOCUMENTS,
        )) {
          call('get_document', { document_id: document.id });
        }
        if (calls.length > 0) return { content: null, toolCalls: calls };
      }
    }
    return { content: this.answer(input, results, offered), toolCalls: [] };
  }

  private answer(input: string, results: ToolResult[], offered: Set<string>): string {
    const words = keywords(input);
    const hits: Hit[] = [];
    for (const result of results) {
      if (result.tool === 'search_documents' && Array.isArray(result.value)) {
        for (const hit of result.value as Record<string, unknown>[]) {
          hits.push({
            documentId: String(hit.document_id),
            title: String(hit.title ?? ''),
            text: String(hit.text ?? ''),
            chunkIndex: typeof hit.chunk_index === 'number' ? hit.chunk_index : undefined,
            startOffset: typeof hit.start_offset === 'number' ? hit.start_offset : undefined,
            endOffset: typeof hit.end_offset === 'number' ? hit.end_offset : undefined,
          });
        }
      }
      if (result.tool === 'get_document' && result.value && typeof result.value === 'object') {
        const document = result.value as Record<string, unknown>;
        const passage = bestPassage(String(document.content ?? ''), words);
        if (passage) hits.push({ documentId: String(document.id), title: String(document.title ?? ''), ...passage });
      }
    }
    const tasks = results
      .filter((r) => r.tool === 'search_tasks' && Array.isArray(r.value))
      .flatMap((r) => r.value as Record<string, unknown>[])
      .slice(0, MAX_TASKS);

    const lines = [
      'Offline retrieval agent (no language model is configured): these are the best matches I may show you, quoted as found, not a generated answer.',
    ];
    if (hits.length > 0) {
      lines.push('', 'From documents:');
      hits.slice(0, MAX_PASSAGES).forEach((hit, i) => {
        const where = [`document ${hit.documentId}`];
        if (hit.chunkIndex !== undefined) where.push(`chunk ${hit.chunkIndex}`);
        if (hit.startOffset !== undefined && hit.endOffset !== undefined)
          where.push(`chars ${hit.startOffset}-${hit.endOffset}`);
        lines.push(`${i + 1}. "${clip(hit.text)}" [${hit.title ? `${hit.title}, ` : ''}${where.join(', ')}]`);
      });
    }
    if (tasks.length > 0) {
      lines.push('', 'From your tasks:');
      for (const task of tasks)
        lines.push(
          `- ${String(task.title)} (${String(task.status)}, ${String(task.priority)}) [task ${String(task.id)}]`,
        );
    }
    if (hits.length === 0 && tasks.length === 0) {
      const searched = [
        offered.has('search_documents') || offered.has('list_documents') ? 'documents' : null,
        offered.has('search_tasks') ? 'tasks' : null,
      ].filter(Boolean);
      lines.push(
        '',
        searched.length > 0
          ? `Nothing in the ${searched.join(' or ')} you may see in this project matched "${clip(input, 200)}".`
          : 'No search tool is available to this run (check the tools allowlist and your role), so nothing was searched.',
      );
    }
    return lines.join('\n');
  }
}

interface ToolResult {
  tool: string;
  value: unknown;
}

function firstUserMessage(messages: ChatMessage[]): string {
  const message = messages.find((m) => m.role === 'user');
  return message && typeof message.content === 'string' ? message.content : '';
}

/** Tool results in the conversation, paired with the tool each answered. */
function toolResults(messages: ChatMessage[]): ToolResult[] {
  const names = new Map<string, string>();
  const results: ToolResult[] = [];
  for (const message of messages) {
    if (message.role === 'assistant')
      for (const call of message.tool_calls ?? []) names.set(call.id, call.function.name);
    if (message.role === 'tool') {
      let value: unknown = null;
      try {
        value = JSON.parse(toolDataText(message.content));
      } catch {
        value = null;
      }
      if (value && typeof value === 'object' && 'error' in value && !Array.isArray(value)) value = null;
      if (
        value &&
        typeof value === 'object' &&
        !Array.isArray(value) &&
        Array.isArray((value as { items?: unknown }).items)
      )
        value = (value as { items: unknown[] }).items;
      results.push({ tool: names.get(message.tool_call_id) ?? '', value });
    }
  }
  return results;
}

/** Significant words, longest first (ties in order of appearance). */
export function keywords(text: string): string[] {
  const words = (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 3 && !STOP_WORDS.has(w));
  const unique = [...new Set(words)];
  return unique
    .map((word, i) => ({ word, i }))
    .sort((a, b) => b.word.length - a.word.length || a.i - b.i)
    .map((x) => x.word);
}

function rankByTitle<T extends { title: string }>(documents: T[], words: string[]): T[] {
  const score = (title: string) => words.filter((w) => title.toLowerCase().includes(w)).length;
  return documents
    .map((d, i) => ({ d, i, s: score(String(d.title ?? '')) }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .map((x) => x.d);
}

/** The window of the text with the most keyword occurrences, with its character offsets. */
function bestPassage(text: string, words: string[]): { text: string; startOffset: number; endOffset: number } | null {
  if (!text) return null;
  const lower = text.toLowerCase();
  const positions: number[] = [];
  for (const word of words) {
    for (let at = lower.indexOf(word); at !== -1 && positions.length < 2000; at = lower.indexOf(word, at + word.length))
      positions.push(at);
  }
  if (positions.length === 0) return null;
  positions.sort((a, b) => a - b);
  let best = positions[0];
  let bestCount = 0;
  for (let i = 0, j = 0; i < positions.length; i += 1) {
    while (positions[j] < positions[i] - PASSAGE_CHARS / 2) j += 1;
    if (i - j + 1 > bestCount) {
      bestCount = i - j + 1;
      best = positions[j];
    }
  }
  const start = Math.max(0, best - 40);
  const end = Math.min(text.length, start + PASSAGE_CHARS);
  return { text: text.slice(start, end), startOffset: start, endOffset: end };
}

function clip(text: string, max = PASSAGE_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
