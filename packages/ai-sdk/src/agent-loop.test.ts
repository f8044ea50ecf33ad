/**
 * The AI SDK's real agent loop (`generateText` and `streamText`, ai 6 and ai 7) with a scripted
 * model of the SDK's own spec version, over failing tools: once as the AI SDK runs them alone,
 * once governed. What the model reads is taken from the prompts the model received.
 */
import { createGovernor, type HostError, type PolicyInput } from "@governor/core";
import { crashMessage, fixtureSecrets, leaksSecrets } from "@governor/testkit";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type GovernedStop, governTools } from "./govern-tools.ts";
import { governorStopCondition } from "./stop-condition.ts";
import {
  callTool,
  LOOP_MODES,
  type LoopMode,
  type Prompt,
  runLoop,
  SDKS,
  type Sdk,
  type Step,
  say,
  toolOutputs,
  useSdk,
} from "./test-support/sdks.ts";

const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };
const SECRET = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";

const POLICY: PolicyInput = {
  tools: {
    get_note: { effect: "read_only", retry: FAST_RETRY },
    fetch_page: { effect: "read_only", retry: FAST_RETRY },
    delete_account: { effect: "mutating" },
    transfer_funds: {
      effect: "mutating",
      retry: FAST_RETRY,
      // The key reaches the tool as this argument; the tool does not deduplicate by it.
      idempotency: { argument: "idempotency_key" },
    },
    query_db: { effect: "read_only" },
    crash: { effect: "read_only" },
  },
};

function governor() {
  return createGovernor(POLICY, { metrics: false, random: () => 0.5 });
}

/** The failing tools, the same for the plain and the governed loop, with what they did. */
function failingTools(sdk: Sdk) {
  const log = { fetches: 0, transfers: [] as { amount: number; key: unknown }[], deletes: 0 };
  const tools = {
    get_note: sdk.tool({
      description: "Reads a note by id",
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }) => {
        if (id !== "welcome") {
          throw new Error(
            `No note with id "${id}" (lookup signed with ${SECRET} in /home/app/notes/index.json). Known ids: welcome`,
          );
        }
        return { id, body: "hello" };
      },
    }),
    fetch_page: sdk.tool({
      inputSchema: z.object({ url: z.string() }),
      execute: async ({ url }) => {
        log.fetches += 1;
        if (log.fetches <= 2) throw new Error("503 Service Unavailable");
        return { url, status: 200 };
      },
    }),
    delete_account: sdk.tool({
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }): Promise<string> => {
        log.deletes += 1;
        throw new Error(`Permission denied: the API token lacks the accounts:delete scope (${id})`);
      },
    }),
    transfer_funds: sdk.tool({
      inputSchema: z.object({ amount: z.number(), idempotency_key: z.string().optional() }),
      execute: async ({ amount, idempotency_key }): Promise<string> => {
        // The transfer commits, then the connection drops before the answer arrives.
        log.transfers.push({ amount, key: idempotency_key });
        throw Object.assign(new Error("socket hang up"), { code: "ECONNRESET" });
      },
    }),
    query_db: sdk.tool({
      inputSchema: z.object({ sql: z.string() }),
      execute: async (): Promise<string> => {
        // A JSON-RPC error from a peer the tool talks to (an MCP server, a JSON-RPC API).
        throw Object.assign(new Error(`Internal error at db-7.internal key=${SECRET}`), {
          code: -32603,
        });
      },
    }),
    crash: sdk.tool({
      inputSchema: z.object({}),
      execute: async (): Promise<string> => {
        // What many servers answer: the message with its stack, paths and secrets.
        const error = new Error(crashMessage());
        throw new Error(`Unhandled exception: ${error.stack}`);
      },
    }),
  };
  return { tools, log };
}

function everything(prompts: Prompt[], steps: unknown): string {
  return JSON.stringify([prompts, steps]);
}

describe.each(SDKS)("$name", (entry) => {
  const sdkFor = useSdk(entry).use;

  describe.each(LOOP_MODES)("%s, governed", (mode: LoopMode) => {
    async function governed(
      sdk: Sdk,
      steps: Step[],
      hooks: { onHostError?: (e: HostError) => void; onStop?: (s: GovernedStop) => void } = {},
    ) {
      const { tools, log } = failingTools(sdk);
      const run = governor().startRun();
      const model = sdk.scripted(steps);
      const result = await runLoop(sdk, mode, {
        model: model.model,
        tools: governTools(tools, { run, ...hooks }),
        stopWhen: [sdk.stepCountIs(6), governorStopCondition(run)],
        prompt: "Do the task",
      });
      return { result, prompts: model.prompts(), run, log };
    }

    it("a wrong id: the model reads one redacted correction, corrects it, the run goes on", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { result, prompts, run } = await governed(sdk, [
        callTool("get_note", { id: "welcom" }, "c1"),
        callTool("get_note", { id: "welcome" }, "c2"),
        say("It says hello."),
      ]);
      expect(prompts).toHaveLength(3);
      const [correction] = toolOutputs(prompts[1]);
      expect(correction).toMatchObject({ type: "error-text" });
      const text = (correction as { value: string }).value;
      expect(text).toMatch(/^get_note: No note with id "welcom"/);
      expect(text).toContain("Known ids: welcome");
      expect(toolOutputs(prompts[2])[1]).toEqual({
        type: "json",
        value: { id: "welcome", body: "hello" },
      });
      expect(everything(prompts, result.steps)).not.toContain(SECRET);
      expect(everything(prompts, result.steps)).not.toContain("/home/app");
      expect(result.text).toBe("It says hello.");
      expect(run.summary()).toMatchObject({
        calls: 2,
        failures: 1,
        actions: { correct_arguments: 1 },
      });
      expect(run.ended).toBe(false);
    });

    it("a 503: retried inside the call, the model sees only the success", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { result, prompts, run, log } = await governed(sdk, [
        callTool("fetch_page", { url: "https://example.com" }),
        say("Fetched."),
      ]);
      expect(log.fetches).toBe(3);
      expect(prompts).toHaveLength(2);
      expect(toolOutputs(prompts[1])).toEqual([
        { type: "json", value: { url: "https://example.com", status: 200 } },
      ]);
      // Not "503" alone: a step's timestamp may hold it (…:03.503Z).
      expect(everything(prompts, result.steps)).not.toContain("Service Unavailable");
      expect(run.summary()).toMatchObject({ calls: 1, attempts: 3, retries: 2 });
    });

    it("a permission error: one call, the loop ends after that step", async (ctx) => {
      const sdk = sdkFor(ctx);
      const stops: GovernedStop[] = [];
      const { result, prompts, run, log } = await governed(
        sdk,
        [
          callTool("delete_account", { id: "acct_1" }, "c1"),
          callTool("delete_account", { id: "acct_1" }, "c2"),
          say("gave up"),
        ],
        { onStop: (s) => stops.push(s) },
      );
      expect(log.deletes).toBe(1);
      expect(prompts).toHaveLength(1);
      expect(result.steps).toHaveLength(1);
      expect(run.summary()).toMatchObject({ reason: "forbidden", calls: 1, attempts: 1 });
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(/^delete_account: Permission denied/);
      expect(stops).toEqual([
        expect.objectContaining({ tool: "delete_account", toolCallId: "c1", reason: "forbidden" }),
      ]);
    });

    it("an uncertain write: never repeated, the run stops and the host gets its key", async (ctx) => {
      const sdk = sdkFor(ctx);
      const stops: GovernedStop[] = [];
      const { result, prompts, run, log } = await governed(
        sdk,
        [
          callTool("transfer_funds", { amount: 100 }, "c1"),
          callTool("transfer_funds", { amount: 100 }, "c2"),
        ],
        { onStop: (s) => stops.push(s) },
      );
      // Exactly one transfer: the dropped connection is not retried, the model gets no retry turn.
      expect(log.transfers).toHaveLength(1);
      expect(prompts).toHaveLength(1);
      expect(run.summary()).toMatchObject({ reason: "uncertain_mutation", attempts: 1 });
      const key = log.transfers[0]?.key;
      expect(key).toMatch(/^gk_[0-9a-f]{32}$/);
      expect(stops).toEqual([
        expect.objectContaining({
          tool: "transfer_funds",
          reason: "uncertain_mutation",
          personResolvable: true,
          idempotencyKey: key,
        }),
      ]);
      // The model is told not to repeat it; the key is the host's, not the model's.
      const output = String(result.steps[0]?.toolResults[0]?.output);
      expect(output).toMatch(/^transfer_funds: /);
      expect(output).not.toContain(String(key));
    });

    it("a JSON-RPC error goes to the host: the model gets a fixed stop text, the host the error", async (ctx) => {
      const sdk = sdkFor(ctx);
      const hostErrors: HostError[] = [];
      const { result, prompts, run } = await governed(
        sdk,
        [callTool("query_db", { sql: "select 1" }), say("done")],
        { onHostError: (e) => hostErrors.push(e) },
      );
      expect(hostErrors).toHaveLength(1);
      expect(hostErrors[0]).toMatchObject({ reason: "protocol_error", failureCode: -32603 });
      expect(run.summary().reason).toBe("protocol_error");
      expect(prompts).toHaveLength(1);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(
        /^query_db: the call could not be completed\. /,
      );
      expect(everything(prompts, result.steps)).not.toContain("db-7.internal");
      expect(everything(prompts, result.steps)).not.toContain(SECRET);
    });

    it("seed check: no stack frame, path or secret of a crash reaches the model", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { result, prompts } = await governed(sdk, [callTool("crash", {}), say("done")]);
      const seen = everything(prompts, result.steps);
      expect(leaksSecrets(seen)).toBe(false);
      for (const secret of fixtureSecrets()) expect(seen).not.toContain(secret);
      expect(seen).not.toMatch(/\bat .+:\d+:\d+/);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(/^crash: /);
    });
  });

  describe("the AI SDK alone, the same tools (the baseline of docs/ai-sdk.md)", () => {
    async function plain(sdk: Sdk, steps: Step[]) {
      const { tools, log } = failingTools(sdk);
      const model = sdk.scripted(steps);
      const result = await sdk.generateText({
        model: model.model,
        tools,
        stopWhen: sdk.stepCountIs(6),
        prompt: "Do the task",
      });
      return { result, prompts: model.prompts(), log };
    }

    it("hands the raw error message, secret and path included, to the model", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { prompts } = await plain(sdk, [callTool("get_note", { id: "welcom" }), say("ok")]);
      const [output] = toolOutputs(prompts[1]);
      expect(output).toMatchObject({ type: "error-text" });
      expect(JSON.stringify(output)).toContain(SECRET);
      expect(JSON.stringify(output)).toContain("/home/app/notes/index.json");
    });

    it("never retries a 503: the model reads it and spends a turn per attempt", async (ctx) => {
      const sdk = sdkFor(ctx);
      const steps = [1, 2, 3].map((i) => callTool("fetch_page", { url: "https://x" }, `c${i}`));
      const { prompts, log } = await plain(sdk, [...steps, say("Fetched.")]);
      expect(log.fetches).toBe(3);
      expect(prompts).toHaveLength(4);
      expect(JSON.stringify(toolOutputs(prompts[1]))).toContain("503 Service Unavailable");
    });

    it("keeps calling a tool the token may not use until the step limit", async (ctx) => {
      const sdk = sdkFor(ctx);
      const steps = [1, 2, 3, 4, 5, 6].map((i) =>
        callTool("delete_account", { id: "acct_1" }, `c${i}`),
      );
      const { log, result } = await plain(sdk, steps);
      expect(log.deletes).toBe(6);
      expect(result.steps).toHaveLength(6);
    });

    it("lets the model repeat a write whose outcome is unknown: two transfers", async (ctx) => {
      const sdk = sdkFor(ctx);
      const { log } = await plain(sdk, [
        callTool("transfer_funds", { amount: 100 }, "c1"),
        callTool("transfer_funds", { amount: 100 }, "c2"),
        say("done"),
      ]);
      expect(log.transfers).toHaveLength(2);
    });

    it("puts a JSON-RPC error and a crash's stack into the model's context", async (ctx) => {
      const sdk = sdkFor(ctx);
      const rpc = await plain(sdk, [callTool("query_db", { sql: "select 1" }), say("ok")]);
      expect(JSON.stringify(rpc.prompts[1])).toContain("db-7.internal");
      const crash = await plain(sdk, [callTool("crash", {}), say("ok")]);
      expect(leaksSecrets(JSON.stringify(crash.prompts[1]))).toBe(true);
    });
  });
});
