/**
 * The shared ledger's Redis server goes down in the middle of a run, under real adapters: the AI
 * SDK's `generateText` with governed tools, and `governClient` over real stdio. The write that
 * comes next is never executed (the ledger cannot hold its key), the model reads a fixed text
 * (no URL, password or socket error), and the host gets `store_unavailable` without the password.
 * The server is a private redis-server with a password, killed with SIGKILL.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { governorStopCondition, governTools } from "@governor/ai-sdk";
import { createGovernor, type HostError } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { createRedisStore, type RedisStore } from "@governor/redis";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { SDKS as AI_SDKS, callTool, say } from "../packages/ai-sdk/src/test-support/sdks.ts";
import {
  type PrivateRedis,
  redisServerMissing,
  startPrivateRedis,
} from "../packages/redis/src/testing-server.ts";

// Run where the other Redis tests run: REDIS_URL set, or GOVERNOR_REQUIRE_REDIS=1 (CI).
const wanted = Boolean(process.env.REDIS_URL) || process.env.GOVERNOR_REQUIRE_REDIS === "1";
const skip = !wanted || redisServerMissing() !== undefined;

const PASSWORD = "s3cret-redis-pw";
const AOF = ["--save", "", "--appendonly", "yes", "--appendfsync", "always"];
/** What the model must never read of the store's trouble. */
const STORE_WORDS = new RegExp(
  `${PASSWORD}|redis:|127\\.0\\.0\\.1|ECONNREFUSED|Socket|closed`,
  "i",
);

describe.skipIf(skip)("the Redis ledger goes down mid-run", () => {
  const servers: PrivateRedis[] = [];
  const stores: RedisStore[] = [];
  const clients: Client[] = [];
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    await Promise.all(stores.splice(0).map((store) => store.close().catch(() => undefined)));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });

  async function ledger() {
    const server = await startPrivateRedis(AOF, PASSWORD);
    servers.push(server);
    const store = createRedisStore({ url: server.url, prefix: "down:" });
    stores.push(store);
    const hostErrors: HostError[] = [];
    const governor = createGovernor(
      {
        tools: { get_note: { effect: "read_only" }, append_log: { effect: "mutating" } },
      },
      {
        metrics: false,
        store,
        storeTimeoutMs: 1_000,
        onHostError: (error) => {
          hostErrors.push(error);
          return undefined;
        },
      },
    );
    return { server, governor, hostErrors };
  }

  function expectStoreTrouble(text: string, hostErrors: readonly HostError[]): void {
    expect(text).toMatch(/storage is unavailable, so the call was not made/);
    expect(text).not.toMatch(STORE_WORDS);
    expect(hostErrors.map((e) => e.reason)).toEqual(["store_unavailable"]);
    expect(hostErrors[0]?.message).not.toContain(PASSWORD);
  }

  it.each(AI_SDKS)("$name: generateText", async (entry) => {
    const sdk = await entry.load();
    const { server, governor, hostErrors } = await ledger();
    const run = governor.startRun();
    const written: string[] = [];
    const tools = governTools(
      {
        get_note: sdk.tool({
          inputSchema: z.object({ id: z.string() }),
          execute: async ({ id }) => {
            // The read went through a working ledger; the server dies before the write.
            await server.stop();
            return `note ${id}`;
          },
        }),
        append_log: sdk.tool({
          inputSchema: z.object({ line: z.string() }),
          execute: async ({ line }) => {
            written.push(line);
            return "appended";
          },
        }),
      },
      { run },
    );
    const model = sdk.scripted([
      callTool("get_note", { id: "welcome" }, "c1"),
      callTool("append_log", { line: "hello" }, "c2"),
      say("done"),
    ]);
    const result = await sdk.generateText({
      model: model.model,
      tools,
      stopWhen: [sdk.stepCountIs(5), governorStopCondition(run)],
      prompt: "Read, then log",
    });
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => String(r.output)));
    expect(outputs[0]).toBe("note welcome");
    expect(written).toEqual([]);
    expectStoreTrouble(outputs[1] ?? "", hostErrors);
    expect(JSON.stringify(model.prompts())).not.toMatch(STORE_WORDS);
    expect(run.summary().reason).toBe("store_unavailable");
  });

  it("governClient over stdio", async () => {
    const { server, governor, hostErrors } = await ledger();
    const dir = mkdtempSync(join(tmpdir(), "governor-redis-down-"));
    const effectsFile = join(dir, "effects.jsonl");
    try {
      const client = new Client({ name: "redis-down", version: "1.0.0" });
      clients.push(client);
      await client.connect(new StdioClientTransport(stdioServerParams({ effectsFile })));
      const governed = governClient(client, { governor, server: "notes" });
      const run = governor.startRun();
      const read = await governed.callTool(run, { name: "get_note", arguments: { id: "welcome" } });
      expect(read).toMatchObject({ kind: "ok" });
      await server.stop();
      const write = await governed.callTool(run, {
        name: "append_log",
        arguments: { line: "hello" },
        callId: "c2",
      });
      expect(write).toMatchObject({ kind: "stop", reason: "store_unavailable" });
      expectStoreTrouble(JSON.stringify(toModelResult(write)), hostErrors);
      expect(readEffects(effectsFile)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
