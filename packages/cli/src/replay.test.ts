import {
  createGovernor,
  type GovernorEvent,
  loadPolicy,
  type PolicyInput,
  type Run,
} from "@governor/core";
import { describe, expect, it } from "vitest";
import { type ReplayReport, replayEventLines } from "./replay-log.ts";

// Logs come from real runs of the governor (its own event stream), observe-only and enforcing,
// then are replayed line by line as `governor replay` reads them.

type Step = { tool: string; args?: Record<string, unknown>; answers: (string | null)[] };

/** A tool call whose attempts answer in turn: a failure text, or `null` for success. */
function script(answers: (string | null)[]) {
  let i = 0;
  return async () => {
    const text = answers[Math.min(i, answers.length - 1)] ?? null;
    i += 1;
    return text === null
      ? { content: [{ type: "text", text: "ok" }] }
      : { isError: true, content: [{ type: "text", text }] };
  };
}

/**
 * Runs an agent that makes each step's call once per turn until the call succeeds or the run
 * stops, at most `turns` turns per step (the model repeats a failed call, like the demo's).
 */
async function logOf(
  policy: PolicyInput,
  runs: Record<string, Step[]>,
  turns = 4,
): Promise<string[]> {
  const events: GovernorEvent[] = [];
  const governor = createGovernor(policy, {
    random: () => 0.5,
    metrics: false,
    onEvent: (e) => events.push(e),
    onHostError: () => ({ action: "stop" }),
  });
  for (const [runId, steps] of Object.entries(runs)) {
    const run: Run = governor.startRun({ runId });
    task: for (const step of steps) {
      const execute = script(step.answers);
      for (let turn = 0; turn < turns; turn += 1) {
        const outcome = await run.call({ tool: step.tool, args: step.args ?? {} }, execute);
        if (outcome.kind === "stop") break task;
        if (outcome.kind === "ok") {
          const failed = (outcome.value as { isError?: boolean }).isError === true;
          if (!failed) continue task;
        }
      }
    }
    run.end();
  }
  return events.map((e) => JSON.stringify(e));
}

const fast = { retry: { attempts: 3, baseDelayMs: 1, maxDelayMs: 2 } };
const ENFORCING: PolicyInput = {
  defaults: fast,
  tools: {
    get_note: { effect: "read_only" },
    fetch: { effect: "read_only" },
    delete_account: { effect: "idempotent" },
    pay: {
      effect: "mutating",
      rules: [{ match: "^Payment refused", action: "stop", reason: "business_rule" }],
    },
  },
};
const OBSERVE: PolicyInput = { ...ENFORCING, observeOnly: true };

const RUNS: Record<string, Step[]> = {
  correct: [{ tool: "get_note", args: { id: "x" }, answers: ['No note with id "x"', null] }],
  flaky: [{ tool: "fetch", answers: ["503 Service Unavailable", "503 Service Unavailable", null] }],
  denied: [{ tool: "delete_account", answers: ["Permission denied: token lacks scope"] }],
  refused: [{ tool: "pay", answers: ["Payment refused: over the limit"] }],
  fine: [
    { tool: "get_note", answers: [null] },
    { tool: "get_note", args: { id: "b" }, answers: [null] },
  ],
};

async function replay(lines: string[], policy: PolicyInput): Promise<ReplayReport> {
  const errors: string[] = [];
  const report = await replayEventLines(lines, loadPolicy(policy), {
    onError: (m) => errors.push(m),
  });
  expect(errors).toEqual([]);
  return report;
}

describe("governor replay", () => {
  it("an enforcing log replayed under its own policy changes nothing", async () => {
    const report = await replay(await logOf(ENFORCING, RUNS), ENFORCING);
    expect(report.runs).toMatchObject({ total: 5, changed: 0, stoppedEarlier: 0, stoppedLater: 0 });
    expect(report.decisions.total).toBe(5); // correct 1, flaky 2 retries, denied 1, refused 1
    expect(report.decisions.changed).toBe(0);
    expect(report.callsSaved).toBe(0);
    expect(report.runDetails).toEqual([]);
  });

  it("issue 29: a decision the call's arguments made (misconfigured: a path foreign to them) replays as decided", async () => {
    // The server names its own storage path, which the log keeps only as [path]; the run judged
    // it against the arguments, which the log does not keep.
    const runs: Record<string, Step[]> = {
      storage: [
        {
          tool: "get_note",
          args: { id: "welcome" },
          answers: ["Invalid state: cannot open /var/lib/notes/index.db"],
        },
      ],
    };
    const lines = await logOf(ENFORCING, runs);
    const decision = lines.map((l) => JSON.parse(l)).find((e) => e.type === "decision");
    expect(decision).toMatchObject({
      reason: "misconfigured",
      input: { failure: { text: expect.stringContaining("[path]") } },
    });
    expect(decision.input.evidence).toEqual({ targets: "foreign" });
    const report = await replay(lines, ENFORCING);
    expect(report.decisions).toMatchObject({ total: 1, changed: 0 });
    expect(report.runDetails).toEqual([]);
  });

  it("an observe-only log replayed under the enforcing policy stops where enforcement stops", async () => {
    const lines = await logOf(OBSERVE, RUNS);
    const report = await replay(lines, ENFORCING);
    // Observe-only passed every failure through: the model repeated the denied and refused
    // calls until its turn limit (4 turns each); enforcement stops both at their first call.
    const byRun = Object.fromEntries(report.runDetails.map((r) => [r.runId, r]));
    expect(byRun.denied).toMatchObject({
      effect: "stopped_earlier",
      before: { reason: "completed" },
      after: { reason: "forbidden", call: 1 },
      callsSaved: 3,
    });
    expect(byRun.refused).toMatchObject({
      after: { reason: "business_rule", call: 1 },
      callsSaved: 3,
    });
    // The flaky read: the model's identical repeats stand in for the runtime's retries.
    expect(byRun.flaky).toBeUndefined();
    expect(byRun.correct).toBeUndefined();
    expect(report.runs).toMatchObject({ total: 5, changed: 2, stoppedEarlier: 2 });
    expect(report.callsSaved).toBe(6);
    // The decisions recorded in observe-only mode were the enforcing policy's already.
    expect(report.decisions.changed).toBe(0);
  });

  it("a stricter policy: per decision before -> after, the run stops earlier, calls saved", async () => {
    const lines = await logOf(ENFORCING, RUNS);
    const report = await replay(lines, {
      ...ENFORCING,
      defaults: { retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 2 } },
    });
    expect(report.changes).toEqual([
      {
        runId: "flaky",
        call: 1,
        tool: "fetch",
        fingerprint: expect.stringMatching(/^[0-9a-f]{16}$/),
        before: { action: "retry_dependency", reason: "unavailable" },
        after: { action: "stop", reason: "retries_exhausted" },
      },
    ]);
    expect(report.runDetails).toEqual([
      expect.objectContaining({
        runId: "flaky",
        effect: "stopped_earlier",
        before: { reason: "completed", call: 1 },
        after: { reason: "retries_exhausted", call: 1 },
        callsSaved: 2,
      }),
    ]);
    expect(report.runs.stoppedEarlier).toBe(1);
    expect(report.callsSaved).toBe(2);
  });

  it("a laxer policy: the run would not stop where it did, and replay says it cannot follow", async () => {
    const lines = await logOf(ENFORCING, RUNS);
    const lax: PolicyInput = {
      ...ENFORCING,
      tools: {
        ...ENFORCING.tools,
        pay: {
          effect: "mutating",
          rules: [{ match: "^Payment refused", action: "correct_arguments" }],
        },
      },
    };
    const report = await replay(lines, lax);
    expect(report.changes).toEqual([
      expect.objectContaining({
        runId: "refused",
        before: { action: "stop", reason: "business_rule" },
        after: { action: "correct_arguments", reason: "invalid_argument" },
      }),
    ]);
    expect(report.runDetails).toEqual([
      expect.objectContaining({
        runId: "refused",
        effect: "stopped_later",
        after: null,
        callsAdded: 1,
        diverged: { call: 1, why: "the model would read another message than in the log" },
      }),
    ]);
    expect(report.runs.stoppedLater).toBe(1);
    expect(report.callsSaved).toBe(0);
  });

  it("a run budget: the run stops at the call that exceeds it, naming the budget", async () => {
    const lines = await logOf(ENFORCING, RUNS);
    const report = await replay(lines, { ...ENFORCING, budgets: { calls: 1 } });
    const fine = report.runDetails.find((r) => r.runId === "fine");
    expect(fine).toMatchObject({
      effect: "stopped_earlier",
      after: { reason: "budget_exhausted", call: 2, budget: "calls" },
      callsSaved: 1,
    });
    expect(report.changes).toContainEqual(
      expect.objectContaining({
        runId: "fine",
        call: 2,
        before: { action: "none", reason: "ok" },
        after: { action: "stop", reason: "budget_exhausted" },
      }),
    );
  });

  it("does not guess: a pattern rule over a redacted text, a verify step it cannot run", async () => {
    const secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    const lines = await logOf(ENFORCING, {
      leaky: [{ tool: "get_note", answers: [`No note for token ${secret}`, null] }],
    });
    expect(lines.join("\n")).not.toContain(secret);
    const byPattern = await replay(lines, {
      ...ENFORCING,
      tools: {
        ...ENFORCING.tools,
        get_note: { effect: "read_only", rules: [{ match: "ghp_", action: "stop" }] },
      },
    });
    expect(byPattern.runDetails[0]).toMatchObject({
      effect: "diverged",
      diverged: {
        call: 1,
        why: "the policy matches get_note's failure text, which the log holds redacted",
      },
    });

    const unkeyed = await logOf(ENFORCING, {
      w: [{ tool: "pay", answers: ["504 Gateway Timeout"] }],
    });
    const verify = await replay(unkeyed, {
      ...ENFORCING,
      tools: { ...ENFORCING.tools, pay: { effect: "mutating", idempotency: { verify: true } } },
    });
    expect(verify.runDetails[0]?.diverged?.why).toBe(
      "a verify step would run; its answer is not in the log",
    );
  });

  it("older lines are read and reported not replayable; runs without an end are counted", async () => {
    const lines = (await logOf(ENFORCING, { correct: RUNS.correct as Step[] })).map((line) => {
      const { call: _c, input: _i, ...rest } = JSON.parse(line) as Record<string, unknown>;
      return JSON.stringify(rest);
    });
    const openRun = (await logOf(ENFORCING, { cut: RUNS.denied as Step[] })).filter(
      (l) => !l.includes('"run_end"'),
    );
    const report = await replay([...lines, ...openRun], ENFORCING);
    expect(report.runs).toMatchObject({ total: 1, unreplayable: 1, open: 1, changed: 0 });
    expect(report.runDetails[0]?.unreplayable).toMatch(/written before replay existed/);
  });

  it("calls logged after their run stopped are not a new, open run", async () => {
    const lines = await logOf(ENFORCING, { denied: RUNS.denied as Step[] });
    // The agent calls again after the stop: the call finds the run ended and logs after it.
    const late = {
      v: 1,
      type: "call",
      at: Date.now(),
      runId: "denied",
      tool: "get_note",
      call: 2,
      callHash: "0123456789abcdef",
      outcome: "stop",
      attempts: 0,
      durationMs: 0,
    };
    expect(lines.at(-1)).toContain('"run_end"');
    const report = await replay([...lines, JSON.stringify(late)], ENFORCING);
    expect(report.runs).toMatchObject({ total: 1, open: 0, changed: 0 });
  });

  it("a run id used again by a later run (a conversation's id) is replayed as its own run", async () => {
    // RunOptions allows a runId to be reused; the later run's events follow the first's run_end.
    const first = await logOf(ENFORCING, { conv: RUNS.fine as Step[] });
    await new Promise((resolve) => setTimeout(resolve, 5)); // the second run starts after the first ended
    const second = await logOf(ENFORCING, { conv: RUNS.flaky as Step[] });
    const report = await replay([...first, ...second], {
      ...ENFORCING,
      defaults: { retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 2 } },
    });
    expect(report.runs).toMatchObject({ total: 2, changed: 1, stoppedEarlier: 1, open: 0 });
    expect(report.changes).toMatchObject([
      { runId: "conv", call: 1, tool: "fetch", after: { reason: "retries_exhausted" } },
    ]);
  });

  it("reports a bad line by number and replays the rest", async () => {
    const lines = await logOf(ENFORCING, { fine: RUNS.fine as Step[] });
    const errors: string[] = [];
    const report = await replayEventLines(
      ["{not json", ...lines, '{"v":2}'],
      loadPolicy(ENFORCING),
      {
        onError: (m) => errors.push(m),
      },
    );
    expect(errors).toEqual([
      expect.stringMatching(/^line 1: not JSON/),
      `line ${lines.length + 2}: unsupported event version 2 (this reader knows 1)`,
    ]);
    expect(report.runs.total).toBe(1);
  });
});

describe("issue 12.5: replay and learned demotions", () => {
  const NEVER = "Invalid value for field 'owner': not allowed";
  const policy: PolicyInput = { tools: { save: { effect: "read_only" } } };

  it("re-decides with the learned counts in the log: the same policy changes nothing, learning off undoes the demotion", async () => {
    // Two runs of futile corrections teach the store; the third run stops at once (learned).
    const lines = await logOf(policy, {
      a: [{ tool: "save", answers: [NEVER] }],
      b: [{ tool: "save", answers: [NEVER] }],
      c: [{ tool: "save", answers: [NEVER] }],
    });
    const learned = lines
      .map((l) => JSON.parse(l))
      .filter((e) => e.type === "decision" && e.reason === "learned_futile");
    expect(learned).toHaveLength(1);
    expect(learned[0].input.learned.correct_futile).toBeCloseTo(4, 3);

    const same = await replayEventLines(lines, loadPolicy(policy));
    expect(same.decisions.changed).toBe(0);

    const off = await replayEventLines(
      lines,
      loadPolicy({ ...policy, learning: { enabled: false } }),
    );
    expect(off.decisions.changed).toBe(1);
    expect(off.changes[0]).toMatchObject({
      runId: "c",
      before: { action: "stop", reason: "learned_futile" },
      after: { action: "correct_arguments" },
    });
  });
});
