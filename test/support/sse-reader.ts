/** One Server-Sent Event as a client sees it. */
export interface SseEvent {
  id?: string;
  event: string;
  data: any;
}

export interface SseRead {
  status: number;
  contentType: string | null;
  events: SseEvent[];
  /** Comment lines (`: ...`), e.g. heartbeats. */
  comments: string[];
  /** The server ended the stream (rather than the reader stopping). */
  closedByServer: boolean;
}

/**
 * Reads `GET url` as an EventSource would (real HTTP, the spec's line format), until the server closes the
 * stream, `stop` says enough, or `timeoutMs` passes.
 */
export async function readSse(
  url: string,
  token: string,
  options: { lastEventId?: string; stop?: (read: SseRead) => boolean; timeoutMs?: number } = {},
): Promise<SseRead> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs ?? 20_000);
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
  if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId;
  const response = await fetch(url, { headers, signal: controller.signal });
  const read: SseRead = {
    status: response.status,
    contentType: response.headers.get('content-type'),
    events: [],
    comments: [],
    closedByServer: false,
  };
  if (!response.ok || !response.body) {
    clearTimeout(timer);
    await response.text().catch(() => undefined);
    return read;
  }
  const decoder = new TextDecoder();
  let buffer = '';
  let current: { id?: string; event?: string; data: string[] } = { data: [] };
  try {
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let newline: number;
      while ((newline = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, newline).replace(/\r$/, '');
        buffer = buffer.slice(newline + 1);
        if (line === '') {
          if (current.data.length)
            read.events.push({
              id: current.id,
              event: current.event ?? 'message',
              data: JSON.parse(current.data.join('\n')),
            });
          current = { data: [] };
        } else if (line.startsWith(':')) {
          read.comments.push(line.slice(1).trim());
        } else {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'id') current.id = value;
          else if (field === 'event') current.event = value;
          else if (field === 'data') current.data.push(value);
        }
      }
      if (options.stop?.(read)) {
        controller.abort();
        return read;
      }
    }
    read.closedByServer = true;
  } catch (error) {
    if (!controller.signal.aborted) throw error;
  } finally {
    clearTimeout(timer);
  }
  return read;
}
