import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const packages = fileURLToPath(new URL("./packages/", import.meta.url));

/**
 * Each `@governor/*` entry point to its TypeScript source: the "source" entry of the package's
 * exports, which is what `--conditions=source` (the children's flag) picks. An alias rather than
 * the condition itself, because under a "source" condition Vite also resolves other packages'
 * "source" entries (eventsource-parser's points at TypeScript), so every package using them (the
 * MCP SDK, ai, the Agents SDK, LangChain's adapters) had to be inlined: transformed by Vite and
 * evaluated by its module runner in every test file's fork. Externalized, Node loads them as it
 * loads them for a user: in the MCP tests that is a third less CPU per file.
 */
function sourceAliases(): { find: RegExp; replacement: string }[] {
  const aliases: { find: RegExp; replacement: string }[] = [];
  for (const dir of readdirSync(packages)) {
    const manifest = JSON.parse(readFileSync(`${packages}${dir}/package.json`, "utf8")) as {
      name: string;
      exports?: Record<string, string | { source?: string }>;
    };
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (typeof target !== "object" || target.source === undefined) continue;
      const specifier = `${manifest.name}${subpath.slice(1)}`.replace(/[/.-]/g, "\\$&");
      aliases.push({
        find: new RegExp(`^${specifier}$`),
        replacement: `${packages}${dir}/${target.source.replace(/^\.\//, "")}`,
      });
    }
  }
  return aliases;
}

export default defineConfig({
  resolve: { alias: sourceAliases() },
  test: {
    include: ["packages/*/src/**/*.test.ts", "test/**/*.test.ts"],
    // Many files spawn `node --import tsx` children (CLI, proxy, stdio servers): a test that takes
    // 3-6 s alone took 12-20 s with the machine's two cores loaded. The limit catches hangs, not
    // slowness, so it leaves room for a loaded runner.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Most files wait on child processes, Redis and timers rather than on the CPU; vitest's
    // default (cores - 1: one worker on a 2-core machine) runs them one after another. On the
    // 2-core machine the Node 22 suite took 250 s with one worker, 171-223 s with three and 164 s
    // with four.
    maxWorkers: 4,
    setupFiles: ["./test/setup.ts"],
    // Bundles the stdio fault server once, so its children start under plain node (see the file).
    globalSetup: ["./test/global-setup.ts"],
  },
});
