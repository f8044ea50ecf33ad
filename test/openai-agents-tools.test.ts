import {
  createGovernor,
  createMemoryStore,
  GovernorError,
  HostError,
  type PolicyInput,
  type Run,
} from "@governor/core";
import { replayedText } from "@governor/core/judge";
import {
  GovernorStopError,
  governedTool,
  governorStopOf,
  hostErrorOf,
} from "@governor/openai-agents";
import {
  crashMessage,
  DEFAULT_SECRET,
  FAKE_BEARER_TOKEN,
  FAKE_GITHUB_TOKEN,
  fixtureSecrets,
  leaksSecrets,
} from "@governor/testkit";
import { Agent, type FunctionTool, tool } from "@openai/agents";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  FAST_RETRIES,
  type ModelView,
  ReactiveModel,
  rejectionOf,
  runTask,
  SDK_UNSUPPORTED,
  SKIP_REASON,
  type Step,
  testRunner,
} from "./openai-agents-support.ts";

const POLICY: PolicyInput = {
  ...FAST_RETRIES,
  tools: {
    get_note: { effect: "read_only" },
    send_email: { effect: "mutating" },
  },
};

const NOTES: Record<string, string> = { welcome: "Welcome to the notes service." };

/** What a tool's `execute` gets: its input, the run context, the SDK's details (its signal). */
type Execute<I> = (
  input: I,
  context: unknown,
  details?: { readonly signal?: AbortSignal },
) => Promise<string>;

/** get_note (reads a note by `id`), governed by `run`. */
function noteTool(run: Run, execute: Execute<{ id: string }>, more: { timeoutMs?: number } = {}) {
  const parameters = z.object({ id: z.string() });
  return governedTool(
    { name: "get_note", description: "Reads a note by id", parameters, ...more, execute },
    { run },
  );
}

/** send_email (sends an email `to` someone), governed by `run`. */
function emailTool(run: Run, execute: Execute<{ to: string }>, more: { timeoutMs?: number } = {}) {
  const parameters = z.object({ to: z.string() });
  return governedTool(
    { name: "send_email", description: "Sends an email", parameters, ...more, execute },
    { run },
  );
}

/** The model's step on every turn: one call of `name` with `args`. */
function calling(name: string, args: Record<string, unknown>): () => Step {
  return () => ({ calls: [{ name, args }] });
}

const readsWelcome = calling("get_note", { id: "welcome" });
const sendsEmail = calling("send_email", { to: "a@example.com" });

/** send_email governed by `run`, failing with `message` on every call; `calls()` counts them. */
function failingEmail(run: Run, message: string) {
  let calls = 0;
  const tool = emailTool(run, async () => {
    calls += 1;
    throw new Error(message);
  });
  return { tool, calls: () => calls };
}

/** Runs one agent task through the SDK's real Runner; returns what run() gave or threw. */
function runAgent(tools: FunctionTool<unknown, never, unknown>[], react: (v: ModelView) => Step) {
  return runTask({ tools }, react, { input: "Read the welcome note." });
}

describe.skipIf(SDK_UNSUPPORTED)(`governedTool in the Agents SDK's Runner (${SKIP_REASON})`, () => {
  it("a wrong id: the model reads Governor's correction as the tool output and fixes its call", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    const ids: string[] = [];
    const getNote = noteTool(run, async ({ id }) => {
      ids.push(id);
      const note = NOTES[id];
      if (note === undefined) throw new Error(`no note with id "${id}"`);
      return note;
    });
    const { model, output, error } = await runAgent([getNote], (v) => {
      if (v.turn === 1) return { calls: [{ name: "get_note", args: { id: "drafts" } }] };
      if (v.last[0]?.text.includes("no note"))
        return { calls: [{ name: "get_note", args: { id: "welcome" } }] };
      return { say: `done: ${v.last[0]?.text}` };
    });
    expect(error).toBeUndefined();
    expect(ids).toEqual(["drafts", "welcome"]);
    const [first, second] = model.texts();
    expect(first).toMatch(/^get_note: no note with id/);
    expect(second).toBe(NOTES.welcome);
    expect(output).toBe(`done: ${NOTES.welcome}`);
    expect(run.summary().actions.correct_arguments).toBe(1);
  });

  it("a 503 is retried inside the call: the model reads only the result", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    let attempts = 0;
    const getNote = noteTool(run, async ({ id }) => {
      attempts += 1;
      if (attempts <= 2) throw new Error("503 Service Unavailable");
      return NOTES[id] ?? "none";
    });
    const { model, error } = await runAgent([getNote], (v) =>
      v.turn === 1 ? { calls: [{ name: "get_note", args: { id: "welcome" } }] } : { say: "ok" },
    );
    expect(error).toBeUndefined();
    expect(attempts).toBe(3);
    expect(model.views).toHaveLength(2);
    expect(model.texts()).toEqual([NOTES.welcome]);
    expect(run.summary().retries).toBe(2);
  });

  it("a permission error ends run() after one call, with Governor's reason for the host", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    const email = failingEmail(run, "403 Forbidden: the token lacks the mail.send scope");
    const { model, error } = await runAgent([email.tool], sendsEmail);
    expect(email.calls()).toBe(1);
    expect(model.views).toHaveLength(1);
    const stop = governorStopOf(error);
    expect(stop).toBeInstanceOf(GovernorStopError);
    expect(stop?.reason).toBe("forbidden");
    expect(stop?.tool).toBe("send_email");
    expect(stop?.summary.reason).toBe("forbidden");
    expect(run.ended).toBe(true);
  });

  it("a write that timed out upstream stops the run with its idempotency key, executed once", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    const email = failingEmail(run, "504 Gateway Timeout");
    const { model, error } = await runAgent([email.tool], sendsEmail);
    expect(email.calls()).toBe(1);
    expect(model.views).toHaveLength(1);
    const stop = governorStopOf(error);
    expect(stop).toBeInstanceOf(GovernorStopError);
    expect(stop).toMatchObject({ reason: "uncertain_mutation", tool: "send_email" });
    expect(stop?.idempotencyKey).toMatch(/^gk_[0-9a-f]{32}$/);
    expect(stop?.modelText).toMatch(/may have/);
  });

  it("a JSON-RPC error goes to the host: run() rejects with the HostError, the model reads nothing of it", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    const getNote = noteTool(run, async () => {
      throw Object.assign(new Error("MCP error -32603: internal failure at /srv/app.js"), {
        name: "McpError",
        code: -32603,
      });
    });
    const { model, error } = await runAgent([getNote], readsWelcome);
    expect(model.views).toHaveLength(1);
    const host = (error as { error?: unknown }).error;
    expect(host).toBeInstanceOf(HostError);
    expect((host as HostError).reason).toBe("protocol_error");
    expect(run.summary().reason).toBe("protocol_error");
  });

  it("seed checks: a failure with a stack frame, paths and secrets reaches the model redacted", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    // No host or absolute path in it: those would make it the server's own failure
    // (`misconfigured`, a stop), and this test is about what the model reads.
    const raw =
      `invalid note id (Authorization: Bearer ${FAKE_BEARER_TOKEN}; STRIPE_KEY=${DEFAULT_SECRET}; ` +
      `GITHUB_TOKEN=${FAKE_GITHUB_TOKEN})\n    at readNote (notes.js:42:17)\n    at process (node:internal/x:1:2)`;
    const getNote = noteTool(run, async () => {
      throw new Error(raw);
    });
    const { model, error } = await runAgent([getNote], (v) =>
      v.turn < 3
        ? { calls: [{ name: "get_note", args: { id: `x${v.turn}` } }] }
        : { say: "gave up" },
    );
    expect(error).toBeUndefined();
    const texts = model.texts();
    expect(texts).toHaveLength(2);
    for (const text of texts) {
      expect(text).toMatch(/^get_note: invalid note id/);
      expect(leaksSecrets(text, fixtureSecrets()), text).toBe(false);
    }
  });

  it("seed checks: a crash that stops the run names no secret in its stop text either", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    const getNote = noteTool(run, async () => {
      throw new Error(crashMessage());
    });
    const { model, error } = await runAgent([getNote], readsWelcome);
    const stop = governorStopOf(error);
    expect(stop).toBeDefined();
    expect(leaksSecrets(stop?.modelText ?? "", fixtureSecrets())).toBe(false);
    expect(leaksSecrets(stop?.message ?? "", fixtureSecrets())).toBe(false);
    for (const text of model.texts()) expect(leaksSecrets(text, fixtureSecrets())).toBe(false);
  });

  it("a stop in one call of a turn does not cut a write in flight in another: it runs once, to the end", async () => {
    const governor = createGovernor({
      ...POLICY,
      tools: { ...POLICY.tools, append_log: { effect: "mutating" } },
    });
    const run = governor.startRun();
    const writes: string[] = [];
    let aborted = false;
    let release: () => void = () => {};
    const started = new Promise<void>((resolve) => {
      release = resolve;
    });
    const appendLog = governedTool(
      {
        name: "append_log",
        description: "Appends a line",
        parameters: z.object({ line: z.string() }),
        execute: async ({ line }, _ctx, details) => {
          release();
          // A write that takes a while and gives up when its signal aborts.
          await new Promise((resolve) => setTimeout(resolve, 30));
          if (details?.signal?.aborted) {
            aborted = true;
            throw new Error("aborted");
          }
          writes.push(line);
          return "appended";
        },
      },
      { run },
    );
    const sendEmail = emailTool(run, async () => {
      await started;
      throw new Error("403 Forbidden");
    });
    const { error } = await runAgent([appendLog, sendEmail], () => ({
      calls: [
        { name: "append_log", args: { line: "hello" } },
        { name: "send_email", args: { to: "a@example.com" } },
      ],
    }));
    expect(governorStopOf(error)?.reason).toBe("forbidden");
    expect(aborted).toBe(false);
    expect(writes).toEqual(["hello"]);
  });

  it("timeoutMs bounds each attempt: a read is retried, a write stops as uncertain", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    let reads = 0;
    const getNote = noteTool(
      run,
      async ({ id }, _ctx, details) => {
        reads += 1;
        if (reads === 1) {
          await new Promise((resolve) => details?.signal?.addEventListener("abort", resolve));
        }
        return NOTES[id] ?? "none";
      },
      { timeoutMs: 20 },
    );
    let sends = 0;
    const sendEmail = emailTool(
      run,
      async () => {
        sends += 1;
        await new Promise((resolve) => setTimeout(resolve, 200));
        return "sent";
      },
      { timeoutMs: 20 },
    );
    const { model, error } = await runAgent([getNote, sendEmail], (v) =>
      v.turn === 1
        ? { calls: [{ name: "get_note", args: { id: "welcome" } }] }
        : { calls: [{ name: "send_email", args: { to: "a@example.com" } }] },
    );
    expect(reads).toBe(2);
    expect(model.texts()).toEqual([NOTES.welcome]);
    expect(sends).toBe(1);
    const stop = governorStopOf(error);
    expect(stop?.reason).toBe("uncertain_mutation");
    expect(stop?.idempotencyKey).toBeDefined();
  });

  it("a timeoutMs past 2^31 - 1 ms is taken as that: the write is not cut after 1 ms and stopped as uncertain", async () => {
    const run = createGovernor(POLICY).startRun();
    let sends = 0;
    const sendEmail = emailTool(
      run,
      async () => {
        sends += 1;
        await new Promise((resolve) => setTimeout(resolve, 30));
        return "sent";
      },
      { timeoutMs: 3e9 },
    );
    const { model, error } = await runAgent([sendEmail], (v) =>
      v.turn === 1
        ? { calls: [{ name: "send_email", args: { to: "a@example.com" } }] }
        : { say: "ok" },
    );
    expect(error).toBeUndefined();
    expect(sends).toBe(1);
    expect(model.texts()).toEqual(["sent"]);
    expect(run.end().reason).toBe("completed");
  });

  it("the host aborting run() during a backoff ends the call at once: no attempt after the abort", async () => {
    const governor = createGovernor({
      ...POLICY,
      defaults: { ...POLICY.defaults, retry: { baseDelayMs: 5_000, maxDelayMs: 5_000 } },
    });
    const run = governor.startRun();
    const controller = new AbortController();
    let attempts = 0;
    const getNote = noteTool(run, async () => {
      attempts += 1;
      // The abort comes while Governor waits before the retry.
      setTimeout(() => controller.abort(new Error("host gave up")), 10);
      throw new Error("503 Service Unavailable");
    });
    const model = new ReactiveModel(readsWelcome);
    const agent = new Agent({
      name: "notes",
      instructions: "Use the tools.",
      model,
      tools: [getNote],
    });
    const started = Date.now();
    await expect(
      testRunner().run(agent, "Read it.", { maxTurns: 3, signal: controller.signal }),
    ).rejects.toBeDefined();
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(attempts).toBe(1);
    expect(run.summary().reason).toBe("aborted");
  });

  it("a streamed run ends the same way: its completion rejects with the stop", async () => {
    const run = createGovernor(POLICY).startRun();
    const email = failingEmail(run, "403 Forbidden");
    const model = new ReactiveModel(sendsEmail);
    const agent = new Agent({ name: "mail", instructions: "Send it.", model, tools: [email.tool] });
    let error: unknown;
    try {
      const stream = await testRunner().run(agent, "Send it.", { maxTurns: 4, stream: true });
      for await (const _event of stream) {
        // drain
      }
      await stream.completed;
      error = stream.error;
    } catch (e) {
      error = e;
    }
    expect(email.calls()).toBe(1);
    expect(governorStopOf(error)?.reason).toBe("forbidden");
  });

  it("a write done before, with no result kept: the model reads that it was done, not undefined", async () => {
    const policy: PolicyInput = {
      ...POLICY,
      tools: { send_email: { effect: "mutating", idempotency: { replay: false } } },
    };
    const store = createMemoryStore();
    const sent: string[] = [];
    // Two runs in one idempotency scope take the same tool call (call_1): the second is a replay.
    const task = async () => {
      const run = createGovernor(policy, { store }).startRun({ idempotencyScope: "job-1" });
      const sendEmail = emailTool(run, async ({ to }) => {
        sent.push(to);
        return `sent to ${to}`;
      });
      return runAgent([sendEmail], (v) =>
        v.turn === 1
          ? { calls: [{ name: "send_email", args: { to: "a@example.com" } }] }
          : { say: `done: ${v.last[0]?.text}` },
      );
    };
    const first = await task();
    expect(first.model.texts()).toEqual(["sent to a@example.com"]);
    const replayed = await task();
    expect(replayed.error).toBeUndefined();
    expect(sent).toEqual(["a@example.com"]);
    expect(replayed.model.texts()).toEqual([replayedText("send_email")]);
  });

  it("observe-only: a tool's error reaches the model as it does without Governor, and run() goes on", async () => {
    // Observe-only enforces nothing: run.call hands back what the tool threw. Taken for trouble
    // in Governor, it became a HostError that ended run(), where the SDK alone answers the model.
    const options = {
      name: "get_note",
      description: "Reads a note",
      parameters: z.object({ id: z.string() }),
      execute: async (): Promise<string> => {
        throw new Error('Note "x" not found');
      },
    };
    const react = (v: ModelView): Step =>
      v.turn === 1 ? { calls: [{ name: "get_note", args: { id: "x" } }] } : { say: "done" };
    const alone = await runAgent([tool(options)], react);
    const run = createGovernor({ ...POLICY, observeOnly: true }).startRun();
    const observed = await runAgent([governedTool(options, { run })], react);
    expect(alone.error).toBeUndefined();
    expect(observed.error).toBeUndefined();
    expect(observed.output).toBe("done");
    expect(observed.model.texts()).toEqual(alone.model.texts());
    expect(run.end().reason).toBe("completed");
  });

  it("the host's abort after a sibling's stop ends run() at once when the run has the host's signal", async () => {
    // The SDK folds the host's signal and its sibling cancel into one signal, which a governed
    // call ignores once the sibling cancel came: the host's later abort reaches Governor only
    // through the run's own signal (issue 29: run() waited for the 6 s tool).
    const controller = new AbortController();
    const governor = createGovernor({
      ...POLICY,
      tools: { ...POLICY.tools, slow_write: { effect: "mutating" } },
    });
    const run = governor.startRun({ signal: controller.signal });
    let cut = false;
    const getNote = noteTool(run, async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      throw new Error("403 Forbidden");
    });
    const slowWrite = governedTool(
      {
        name: "slow_write",
        description: "A write that takes 6 s and stops when its signal aborts",
        parameters: z.object({ line: z.string() }),
        execute: (_input, _ctx, details) =>
          new Promise<string>((resolve, reject) => {
            const timer = setTimeout(() => resolve("written"), 6_000);
            details?.signal?.addEventListener("abort", () => {
              cut = true;
              clearTimeout(timer);
              reject(new Error("aborted"));
            });
          }),
      },
      { run },
    );
    const model = new ReactiveModel(() => ({
      calls: [
        { name: "get_note", args: { id: "welcome" } },
        { name: "slow_write", args: { line: "x" } },
      ],
    }));
    const agent = new Agent({
      name: "notes",
      instructions: "Use the tools.",
      model,
      tools: [getNote, slowWrite],
    });
    const abort = setTimeout(() => controller.abort(new Error("host gave up")), 300);
    const started = Date.now();
    const error = await rejectionOf(
      testRunner().run(agent, "Read it.", { maxTurns: 3, signal: controller.signal }),
    );
    const took = Date.now() - started;
    clearTimeout(abort);
    expect(governorStopOf(error)?.reason).toBe("forbidden");
    expect(cut).toBe(true);
    // The abort came at 300 ms; the tool would have answered at 6 s.
    expect(took).toBeLessThan(3_000);
  });

  it.each([
    ["null", null],
    ["42", 42],
    ["undefined", undefined],
  ])(
    "a tool that throws %s said nothing the model can act on: it goes to the host (malformed_response), not 'change the arguments'",
    async (_what, thrown) => {
      const governor = createGovernor(POLICY);
      const run = governor.startRun();
      let calls = 0;
      const getNote = noteTool(run, async () => {
        calls += 1;
        throw thrown;
      });
      const { model, error } = await runAgent([getNote], readsWelcome);
      expect(calls).toBe(1);
      expect(model.views).toHaveLength(1);
      const host = hostErrorOf(error);
      expect(host).toBeInstanceOf(HostError);
      expect(host?.reason).toBe("malformed_response");
      expect(host?.message).toMatch(/threw/);
      expect(run.summary().reason).toBe("malformed_response");
    },
  );

  it("hostErrorOf finds the HostError in what run() threw, and nothing in a stop or another error", async () => {
    const governor = createGovernor(POLICY);
    const run = governor.startRun();
    const getNote = noteTool(run, async () => {
      throw Object.assign(new Error("MCP error -32603: internal failure"), {
        name: "McpError",
        code: -32603,
      });
    });
    const { error } = await runAgent([getNote], readsWelcome);
    expect(error).not.toBeInstanceOf(HostError);
    const host = hostErrorOf(error);
    expect(host).toBe((error as { error?: unknown }).error);
    expect(host).toMatchObject({ reason: "protocol_error", failureCode: -32603, tool: "get_note" });
    expect(governorStopOf(error)).toBeUndefined();

    const stopRun = governor.startRun();
    const denied = failingEmail(stopRun, "403 Forbidden");
    const stopped = await runAgent([denied.tool], sendsEmail);
    expect(governorStopOf(stopped.error)?.reason).toBe("forbidden");
    expect(hostErrorOf(stopped.error)).toBeUndefined();
    expect(hostErrorOf(new Error("x"))).toBeUndefined();
    expect(hostErrorOf(null)).toBeUndefined();
  });

  it("a call to a tool the agent does not have ends run() at once (the SDK's default toolNotFoundBehavior): bounded without Governor", async () => {
    const run = createGovernor(POLICY).startRun();
    const getNote = noteTool(run, async () => "Welcome!");
    const { model, error } = await runAgent([getNote], calling("get_notes", { id: "welcome" }));
    expect(model.views).toHaveLength(1);
    expect(error).toMatchObject({ name: "ModelBehaviorError" });
    expect(String((error as Error).message)).toMatch(/get_notes not found/);
    expect(run.summary().calls).toBe(0);
  });

  it("refuses options it would bypass, naming what is accepted", () => {
    const run = createGovernor(POLICY).startRun();
    const base = {
      name: "t",
      description: "d",
      parameters: z.object({}),
      execute: async () => "x",
    };
    expect(() => governedTool({ ...base, errorFunction: () => "e" }, { run })).toThrow(
      /errorFunction is not accepted/,
    );
    expect(() => governedTool({ ...base, timeoutMs: -1 }, { run })).toThrow(
      /timeoutMs must be a positive finite number/,
    );
    expect(() => governedTool({ ...base, timeoutMs: -1 }, { run })).toThrow(GovernorError);
  });
});
