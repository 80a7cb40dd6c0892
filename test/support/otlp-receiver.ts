import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import protobuf from 'protobufjs';

/**
 * The part of OpenTelemetry's OTLP trace schema (opentelemetry/proto, collector/trace/v1 and trace/v1) a test
 * needs, with the field numbers of the real .proto files; protobufjs skips every other field.
 */
const OTLP_TRACE_PROTO = `
syntax = "proto3";
package otlp;
message ExportTraceServiceRequest { repeated ResourceSpans resource_spans = 1; }
message ResourceSpans { Resource resource = 1; repeated ScopeSpans scope_spans = 2; }
message Resource { repeated KeyValue attributes = 1; }
message ScopeSpans { InstrumentationScope scope = 1; repeated Span spans = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Span {
  bytes trace_id = 1;
  bytes span_id = 2;
  bytes parent_span_id = 4;
  string name = 5;
  int32 kind = 6;
  fixed64 start_time_unix_nano = 7;
  fixed64 end_time_unix_nano = 8;
  repeated KeyValue attributes = 9;
  Status status = 15;
}
message Status { string message = 2; int32 code = 3; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
`;

const ExportRequest = protobuf.parse(OTLP_TRACE_PROTO).root.lookupType('otlp.ExportTraceServiceRequest');

/** OTLP span kinds. */
export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  scope: string;
  service: string;
  attributes: Record<string, string | number | boolean>;
  statusCode: number;
}

interface KeyValue {
  key: string;
  value?: { stringValue?: string; boolValue?: boolean; intValue?: string; doubleValue?: number };
}

function attributesOf(list: KeyValue[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of list ?? []) {
    if (!value) continue;
    out[key] =
      value.stringValue ??
      value.boolValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.doubleValue ??
      '';
  }
  return out;
}

/**
 * A local OTLP/HTTP receiver (what an OpenTelemetry Collector offers on :4318): accepts POST /v1/traces in
 * protobuf, as the app's exporter sends it, and decodes every span it gets. Point OTEL_EXPORTER_OTLP_ENDPOINT at
 * `url`.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Raw request bodies as received, for scans (e.g. no secret in any exported attribute). */
  readonly payloads: Buffer[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        if (
          req.method !== 'POST' ||
          req.url !== '/v1/traces' ||
          !String(req.headers['content-type']).startsWith('application/x-protobuf')
        ) {
          res.writeHead(404).end();
          return;
        }
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        receiver!.payloads.push(body);
        receiver!.ingest(body);
        // An empty ExportTraceServiceResponse: everything accepted.
        res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  private ingest(body: Buffer): void {
    const decoded = ExportRequest.toObject(ExportRequest.decode(body), { longs: String, defaults: false }) as {
      resourceSpans?: {
        resource?: { attributes?: KeyValue[] };
        scopeSpans?: { scope?: { name?: string }; spans?: Record<string, any>[] }[];
      }[];
    };
    for (const resourceSpans of decoded.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name'] ?? '');
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            traceId: Buffer.from(span.traceId as Uint8Array).toString('hex'),
            spanId: Buffer.from(span.spanId as Uint8Array).toString('hex'),
            parentSpanId: span.parentSpanId ? Buffer.from(span.parentSpanId as Uint8Array).toString('hex') : '',
            name: String(span.name ?? ''),
            kind: Number(span.kind ?? 0),
            scope: scopeSpans.scope?.name ?? '',
            service,
            attributes: attributesOf(span.attributes as KeyValue[] | undefined),
            statusCode: Number(span.status?.code ?? 0),
          });
        }
      }
    }
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Whether `ancestor` is on the parent chain of `span` (within one trace). */
export function descendsFrom(spans: readonly ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  for (let current = byId.get(span.parentSpanId); current; current = byId.get(current.parentSpanId)) {
    if (current.spanId === ancestor.spanId) return true;
  }
  return false;
}
