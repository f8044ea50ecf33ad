/**
 * Once per vitest run, bundles the TypeScript entry points that tests start as child processes
 * into JavaScript files (each with its imports), so each child runs under plain node rather than
 * through tsx. Measured on the 2-core machine, one start of the fault server: 0.12-0.20 CPU-s
 * instead of 0.78-0.93. The bundles are built from the sources of this run, so they cannot be
 * stale.
 * - The testkit's stdio fault server: its path goes to the workers as
 *   `GOVERNOR_TESTKIT_STDIO_BUNDLE`, which `stdioServerParams()` reads from a source checkout.
 * - test/fixtures/redis-worker.ts: `inject("redisWorkerBundle")` in redis-workers.test.ts.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** test/fixtures/redis-worker.ts bundled: run it with `node --enable-source-maps`. */
    redisWorkerBundle: string;
  }
}

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default async function setup(project: TestProject): Promise<() => void> {
  const dir = mkdtempSync(join(tmpdir(), "governor-test-bundles-"));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    await bundle(dir);
  } catch (error) {
    remove();
    throw error;
  }
  process.env.GOVERNOR_TESTKIT_STDIO_BUNDLE = join(dir, "stdio-main.mjs");
  project.provide("redisWorkerBundle", join(dir, "redis-worker.mjs"));
  return remove;
}

async function bundle(dir: string): Promise<void> {
  await build({
    entryPoints: {
      "stdio-main": source("../packages/testkit/src/stdio-main.ts"),
      "redis-worker": source("./fixtures/redis-worker.ts"),
    },
    outdir: dir,
    outExtension: { ".js": ".mjs" },
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    // The workspace packages' TypeScript sources, as `--conditions=source` picks them.
    conditions: ["source"],
    // CommonJS dependencies bundled into ESM still call require().
    banner: {
      js: 'import { createRequire as bundleRequire } from "node:module"; const require = bundleRequire(import.meta.url);',
    },
    // The children run with --enable-source-maps: stack traces name the TypeScript sources, as
    // under tsx (tests look for fault-server.ts in a crash's stack).
    sourcemap: true,
    sourcesContent: false,
    logLevel: "warning",
  });
  // Core reads its text model's weights with require("./text-model.weights.json") beside the
  // module, as its build copies them into dist/; a bundle needs them beside it too.
  copyFileSync(
    source("../packages/core/src/judge/text-model.weights.json"),
    join(dir, "text-model.weights.json"),
  );
}
