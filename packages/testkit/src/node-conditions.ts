/**
 * Test-only workaround, imported for its side effect before anything loads the SDK's HTTP or SSE
 * client under Vitest.
 *
 * The workspace's vitest config sets `ssr.resolve.conditions: ["source"]`, which Vitest also passes
 * to its workers as `node --conditions source`. Node then resolves `eventsource-parser/stream`
 * (imported by the SDK's Streamable HTTP client, which Vitest leaves to Node) to that package's
 * own `source` export, a `.ts` file Node 20 cannot load ("Unknown file extension .ts"). This hook
 * resolves those two packages without the `source` condition. It does nothing unless the process
 * runs with `--conditions source`, and can go once the config inlines the SDK
 * (`test.server.deps.inline: ["@modelcontextprotocol/sdk"]`).
 */
import { register } from "node:module";

const HOOK = `
const PACKAGES = ["eventsource-parser", "eventsource"];
export async function resolve(specifier, context, nextResolve) {
  if (PACKAGES.some((p) => specifier === p || specifier.startsWith(p + "/"))) {
    const conditions = context.conditions.filter((c) => c !== "source");
    return nextResolve(specifier, { ...context, conditions });
  }
  return nextResolve(specifier, context);
}`;

const argv = process.execArgv;
const sourceCondition = argv.some(
  (arg, i) => arg === "--conditions=source" || (arg === "--conditions" && argv[i + 1] === "source"),
);
if (sourceCondition) {
  register(`data:text/javascript,${encodeURIComponent(HOOK)}`);
}
