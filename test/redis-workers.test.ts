import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createRedisStore } from "@governor/redis";
import { startHttpServer } from "@governor/testkit";
import { describe, expect, it } from "vitest";

/**
 * Two worker processes share one RedisStore. Worker A's response is lost after the write commits;
 * worker B takes the same logical call (same call id, so the same key): exactly one effect.
 */

const url = process.env.REDIS_URL;
const required = process.env.GOVERNOR_REQUIRE_REDIS === "1";
const problem = await probe();

async function probe(): Promise<string | undefined> {
  if (!url) return "REDIS_URL is not set";
  const store = createRedisStore({ url, connectTimeoutMs: 1_000 });
  try {
    await store.get("probe");
    return undefined;
  } catch (err) {
    return `no answer at ${url} (${(err as Error).message})`;
  } finally {
    await store.close().catch(() => undefined);
  }
}

if (problem && required) {
  describe("two workers on Redis (required by GOVERNOR_REQUIRE_REDIS=1)", () => {
    it("has a Redis server", () => {
      throw new Error(problem);
    });
  });
}

const root = fileURLToPath(new URL("..", import.meta.url));
const worker = fileURLToPath(new URL("./fixtures/redis-worker.ts", import.meta.url));
const tsx = import.meta.resolve("tsx");

/** Runs one worker process (asynchronously: the MCP server lives in this process). */
async function runWorker(
  mcpUrl: string,
  prefix: string,
  tool: string,
  callId: string,
  honors: boolean,
) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      "--conditions=source",
      "--import",
      tsx,
      worker,
      url as string,
      prefix,
      mcpUrl,
      tool,
      callId,
      honors ? "1" : "0",
    ],
    { cwd: root, encoding: "utf8", timeout: 30_000 },
  );
  return JSON.parse(stdout.trim()) as { kind: string; reason?: string };
}

describe.runIf(!problem)("two workers sharing one RedisStore", () => {
  it("a key-honoring write: B retries with A's key, the server deduplicates, one effect", async () => {
    const http = await startHttpServer({});
    try {
      const prefix = `governor-test:${randomUUID()}:`;
      const a = await runWorker(http.url, prefix, "write_then_drop", "call-42", true);
      expect(a).toEqual({ kind: "stop", reason: "retries_exhausted" });
      const b = await runWorker(http.url, prefix, "write_then_drop", "call-42", true);
      expect(b.kind).toBe("ok");
      const effects = http.state.effects().filter((e) => e.tool === "write_then_drop");
      expect(effects).toHaveLength(1);
    } finally {
      await http.close();
    }
  });

  it("a write that ignores keys: B finds the key uncertain and refuses, one effect", async () => {
    const http = await startHttpServer({
      scenario: { append_log: [{ kind: "drop_after_commit" }] },
    });
    try {
      const prefix = `governor-test:${randomUUID()}:`;
      const a = await runWorker(http.url, prefix, "append_log", "call-7", false);
      expect(a).toEqual({ kind: "stop", reason: "uncertain_mutation" });
      const b = await runWorker(http.url, prefix, "append_log", "call-7", false);
      expect(b).toEqual({ kind: "stop", reason: "uncertain_mutation" });
      expect(http.state.effects().filter((e) => e.tool === "append_log")).toHaveLength(1);
    } finally {
      await http.close();
    }
  });
});
