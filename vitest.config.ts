import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: { conditions: ["source"] },
  ssr: { resolve: { conditions: ["source"] } },
  test: {
    include: ["packages/*/src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 20_000,
    hookTimeout: 20_000,
    pool: "forks",
    setupFiles: ["./test/setup.ts"],
    // The "source" condition is ours; the SDK's dependencies (eventsource-parser) also export a
    // "source" entry pointing at TypeScript, so let Vite load the SDK instead of Node.
    server: {
      deps: {
        inline: [
          "@modelcontextprotocol/sdk",
          "@modelcontextprotocol/client",
          "ai",
          "@ai-sdk/provider-utils",
          "@ai-sdk/gateway",
        ],
      },
    },
  },
});
