// The demo's governed agent traced through the OpenTelemetry SDK, printed as a tree: under each
// tool call, what Governor did and why. Run: pnpm --silent tsx examples/demo-trace.ts
//   (or node --conditions=source --import tsx examples/demo-trace.ts)
import { runDemo } from "../packages/cli/src/demo.ts";
import { formatSpanTree, memoryTracing, registerGlobally, spanTree } from "./span-tree.ts";

/** Runs the demo with a global tracer provider; answers the governed runs' trace as text. */
export async function demoTrace(): Promise<string> {
  const { provider, exporter } = memoryTracing();
  // Governor traces through the global provider by default: nothing to pass to the demo.
  registerGlobally(provider);
  await runDemo({});
  await provider.forceFlush();
  return formatSpanTree(spanTree(exporter.getFinishedSpans()));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  process.stdout.write(`${await demoTrace()}\n`);
}
