import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
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
    // The "source" condition is ours; the SDK's dependencies (eventsource-parser) also export a
    // "source" entry pointing at TypeScript, so let Vite load the SDK instead of Node.
    server: {
      deps: {
        inline: [
          "@modelcontextprotocol/sdk",
          "ai",
          "@ai-sdk/provider-utils",
          "@ai-sdk/gateway",
          "@ai-sdk/mcp",
          "@openai/agents",
          "@openai/agents-core",
          "@openai/agents-openai",
          "@modelcontextprotocol/client",
          "@modelcontextprotocol/core",
          "eventsource",
          "@langchain/mcp-adapters",
        ],
      },
    },
  },
});
