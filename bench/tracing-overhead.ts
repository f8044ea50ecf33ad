// What tracing costs a call that succeeds at once, side by side in one process: tracing off,
// tracing on with no SDK registered (the default when @opentelemetry/api is installed: one lookup
// per call), and with an SDK recording every span (into an exporter that only counts them: the
// in-memory exporter's buffers are not what is measured), beside the same two spans made by hand.
// Run: node --conditions=source --import tsx bench/tracing-overhead.ts
import { createGovernor } from "@governor/core";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanExporter,
} from "@opentelemetry/sdk-trace-base";

const ok = { content: [{ type: "text", text: "ok" }] };
const N = 100_000;
const ROUNDS = 9;

async function nsPerCall(tracing: boolean): Promise<number> {
  const gov = createGovernor(
    { tools: { t: { effect: "read_only" } } },
    { metrics: false, tracing },
  );
  const run = gov.startRun();
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    await run.call({ tool: "t", args: { i: 1 } }, async () => ok);
  }
  return ((performance.now() - t0) * 1e6) / N;
}

const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1] as number;

async function compare(label: string): Promise<void> {
  const off: number[] = [];
  const on: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    off.push(await nsPerCall(false));
    on.push(await nsPerCall(true));
  }
  const ratio = median(on) / median(off);
  console.log(
    `${label}: tracing off ${median(off).toFixed(0)} ns/call, on ${median(on).toFixed(0)} ns/call, ratio ${ratio.toFixed(2)}`,
  );
}

await compare("no SDK registered");
let exported = 0;
const exporter: SpanExporter = {
  export(spans: ReadableSpan[], done) {
    exported += spans.length;
    done({ code: 0 });
  },
  async shutdown() {},
};
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }),
);
await compare("SDK recording every span");

// The SDK's own cost for the same spans: two started, nested and ended per call, no Governor.
const tracer = trace.getTracer("bench");
const bare: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const call = tracer.startSpan("execute_tool t");
    const inCall = trace.setSpan(context.active(), call);
    const attempt = tracer.startSpan("governor.attempt t", {}, inCall);
    await context.with(trace.setSpan(inCall, attempt), async () => ok);
    attempt.end();
    call.end();
  }
  bare.push(((performance.now() - t0) * 1e6) / N);
}
console.log(
  `the same two spans made by hand: ${median(bare).toFixed(0)} ns/call (${exported} spans exported)`,
);
