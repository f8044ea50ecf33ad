/**
 * Once per vitest run: bundles the testkit's fault server (`stdio-main.ts` with its imports) into
 * one JavaScript file and hands its path to the test workers as `GOVERNOR_TESTKIT_STDIO_BUNDLE`,
 * so each stdio fault server the tests start runs under plain node, not through tsx. Measured on
 * the 2-core machine, one start: 0.18 CPU-s instead of 0.95. The bundle is built from the sources
 * of this run, so it cannot be stale.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

export default async function setup(): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "governor-fault-server-"));
  const outfile = join(dir, "stdio-main.mjs");
  await build({
    entryPoints: [fileURLToPath(new URL("../packages/testkit/src/stdio-main.ts", import.meta.url))],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    // The workspace packages' TypeScript sources, as `--conditions=source` picks them.
    conditions: ["source"],
    // CommonJS dependencies bundled into ESM still call require().
    banner: {
      js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);',
    },
    // The children run with --enable-source-maps: stack traces name the TypeScript sources, as
    // under tsx (tests look for fault-server.ts in a crash's stack).
    sourcemap: true,
    sourcesContent: false,
    logLevel: "warning",
  });
  process.env.GOVERNOR_TESTKIT_STDIO_BUNDLE = outfile;
  return () => rmSync(dir, { recursive: true, force: true });
}
