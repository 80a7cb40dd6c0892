import { AppException } from '../../common/errors/app.exception.js';
import { ErrorCode } from '../../common/errors/error-code.js';

export interface ToolCallBody {
  name: string;
  arguments: Record<string, unknown> | undefined;
}

/** The JSON door's body, read once per call (an object, so the count of reads can be observed). */
export const toolCallBody = {
  /** `{name, arguments}` of POST /call, or 400 invalid_request. */
  parse(body: unknown): ToolCallBody {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new AppException(
        ErrorCode.InvalidRequest,
        'The body must be a JSON object {"name": "<tool>", "arguments": {...}}',
      );
    }
    const { name, arguments: args, ...rest } = body as Record<string, unknown>;
    const extra = Object.keys(rest);
    if (extra.length > 0)
      throw new AppException(
        ErrorCode.InvalidRequest,
        `Unexpected field "${extra[0]}" in the body; it takes only name and arguments`,
        { field: extra[0] },
      );
    if (typeof name !== 'string' || name.length === 0 || name.length > 100) {
      throw new AppException(ErrorCode.InvalidRequest, '"name" must be a tool name (a non-empty string)', {
        field: 'name',
      });
    }
    if (args !== undefined && args !== null && (typeof args !== 'object' || Array.isArray(args))) {
      throw new AppException(ErrorCode.InvalidRequest, '"arguments" must be a JSON object', { field: 'arguments' });
    }
    return { name, arguments: (args ?? undefined) as Record<string, unknown> | undefined };
  },
};
