// Finished OpenTelemetry spans as a tree (parent before children, siblings in start order), and as
// text: what docs/telemetry.md shows and what the tracing tests compare.
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";

export interface SpanNode {
  readonly span: ReadableSpan;
  readonly children: SpanNode[];
}

/** A provider exporting into memory, and the global context manager spans nest through. */
export function memoryTracing(): {
  provider: BasicTracerProvider;
  exporter: InMemorySpanExporter;
} {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  return { provider, exporter };
}

/** Sets `provider` as the global tracer provider (once per test file: the API keeps the first). */
export function registerGlobally(provider: BasicTracerProvider): void {
  trace.setGlobalTracerProvider(provider);
}

function startMs(span: ReadableSpan): number {
  return span.startTime[0] * 1e3 + span.startTime[1] / 1e6;
}

/** The spans as trees: roots are spans whose parent is not among them. */
export function spanTree(spans: readonly ReadableSpan[]): SpanNode[] {
  const nodes = new Map<string, SpanNode>();
  for (const span of spans) nodes.set(span.spanContext().spanId, { span, children: [] });
  const roots: SpanNode[] = [];
  for (const node of nodes.values()) {
    const parentId = node.span.parentSpanContext?.spanId;
    const parent = parentId === undefined ? undefined : nodes.get(parentId);
    if (parent === undefined) roots.push(node);
    else parent.children.push(node);
  }
  const order = (list: SpanNode[]) => {
    list.sort((a, b) => startMs(a.span) - startMs(b.span));
    for (const n of list) order(n.children);
  };
  order(roots);
  return roots;
}

/** Attributes worth reading in a tree: Governor's and the conventions', no ids or budgets. */
const SHOWN = [
  "gen_ai.tool.call.id",
  "governor.attempt",
  "governor.outcome",
  "governor.attempts",
  "governor.action",
  "governor.reason",
  "governor.cause",
  "governor.certainty",
  "governor.delay_ms",
  "governor.idempotency_key.present",
  "error.type",
  "mcp.method.name",
  "rpc.response.status_code",
  "governor.run.reason",
  "governor.budget",
];

function describe(span: ReadableSpan, shown: readonly string[]): string {
  const parts: string[] = [];
  for (const key of shown) {
    const value = span.attributes[key];
    if (value !== undefined) parts.push(`${key}=${String(value)}`);
  }
  const status = span.status.code === 2 ? " ERROR" : "";
  return `${span.name}${status}${parts.length > 0 ? `  ${parts.join(" ")}` : ""}`;
}

/** The trees as indented text, one span a line. */
export function formatSpanTree(
  roots: readonly SpanNode[],
  shown: readonly string[] = SHOWN,
): string {
  const lines: string[] = [];
  const walk = (node: SpanNode, prefix: string, last: boolean, top: boolean) => {
    lines.push(`${top ? "" : `${prefix}${last ? "└─ " : "├─ "}`}${describe(node.span, shown)}`);
    const next = top ? "" : `${prefix}${last ? "   " : "│  "}`;
    node.children.forEach((child, i) => {
      walk(child, next, i === node.children.length - 1, false);
    });
  };
  for (const root of roots) walk(root, "", true, true);
  return lines.join("\n");
}
