/**
 * attack28: the proxy's run per window (docs/proxy.md, "Runs and stops behind a proxy"): budgets
 * count within the window, and a `budget_exhausted` stop pauses every tool "until the window
 * ends". But any other stop (here `repeated_failure`, scoped to one tool) ended the window's run,
 * and the next call started a fresh run with fresh budgets and a fresh window at once: a model
 * that made one tool fail three times the same way got the whole calls budget again, as often as
 * it liked, within one window.
 */
import { createGovernor } from "@governor/core";
import { governClient } from "@governor/mcp";
import { connectInMemory, createFaultServer, type Scenario } from "@governor/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { createProxySession, type ProxyLog } from "../packages/cli/src/proxy/session.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** A proxy session over the fault server (its scenario), on `clock`, with a 60 s window. */
async function windowSession(
  policy: object,
  clock: { now: number },
  extra: { scenario?: Scenario; timeoutMs?: number } = {},
) {
  const server = createFaultServer(
    extra.scenario === undefined ? {} : { scenario: extra.scenario },
  );
  const { client } = await connectInMemory(server);
  closers.push(() => client.close());
  const governor = createGovernor(policy, { now: () => clock.now, metrics: false });
  const logs: ProxyLog[] = [];
  const session = createProxySession({
    governor,
    governed: governClient(client, { governor }),
    windowMs: 60_000,
    ...(extra.timeoutMs !== undefined && { timeoutMs: extra.timeoutMs }),
    now: () => clock.now,
    log: (entry) => logs.push(entry),
  });
  return { session, logs };
}

describe("attack28: a stop in the proxy's window does not refill the window's budgets", () => {
  it("calls budget 6: three failures of get_note, then search_notes; at most 6 calls reach the server in the window", async () => {
    const clock = { now: Date.now() };
    const { session, logs } = await windowSession(
      { budgets: { calls: 6 }, tools: { "*": { effect: "read_only" } } },
      clock,
    );
    for (const id of ["nope-1", "nope-2", "nope-3"]) {
      await session.callTool({ name: "get_note", arguments: { id } });
    }
    expect(logs.at(-1)?.data).toMatchObject({ reason: "repeated_failure", scope: "tool" });
    let answered = 0;
    for (let i = 0; i < 10; i++) {
      clock.now += 1_000; // all within the 60 s window
      const result = await session.callTool({
        name: "search_notes",
        arguments: { query: `q${i}` },
      });
      if (!result.isError) answered++;
    }
    // 3 calls were spent on get_note: 3 are left in this window.
    expect(answered).toBeLessThanOrEqual(3);
    // The next window starts with the whole budget again.
    clock.now += 60_000;
    const next = await session.callTool({ name: "search_notes", arguments: { query: "next" } });
    expect(next.isError).toBeFalsy();
  });

  it("calls budget 10, two stops in one window: each call counts once (a run's summary reports its own calls)", async () => {
    const clock = { now: Date.now() };
    const denied = { kind: "error" as const, text: "Permission denied: you cannot search notes" };
    const { session, logs } = await windowSession(
      { budgets: { calls: 10 }, tools: { "*": { effect: "read_only" } } },
      clock,
      { scenario: { search_notes: [{ kind: "ok" }, { kind: "ok" }, denied] } },
    );
    for (const id of ["nope-1", "nope-2", "nope-3"]) {
      await session.callTool({ name: "get_note", arguments: { id } });
    }
    expect(logs.at(-1)?.data).toMatchObject({ reason: "repeated_failure" });
    for (const query of ["a", "b", "c"]) {
      await session.callTool({ name: "search_notes", arguments: { query } });
    }
    expect(logs.at(-1)?.data).toMatchObject({ reason: "forbidden" });
    // 6 calls reached the server: 4 are left in the window (the second run's summary said 6,
    // its own 3 and the 3 it started with, and was added to the 3 of the first: 9 spent, 1 left).
    let answered = 0;
    for (let i = 0; i < 6; i++) {
      const result = await session.callTool({ name: "append_log", arguments: { line: `l${i}` } });
      if (!result.isError) answered++;
    }
    expect(answered).toBe(4);
  });
});

/** A tool's failure answer (`isError`) with one text part. */
const failing = (text: string) => ({ content: [{ type: "text", text }], isError: true });

describe("startRun({ continues }): a run that goes on from another starts where it ended", () => {
  it("starts with what the runs before it spent of every counted budget; each summary counts its own calls", async () => {
    const governor = createGovernor(
      { budgets: { calls: 4, corrections: 1 }, tools: { "*": { effect: "read_only" } } },
      { metrics: false },
    );
    let sent = 0;
    const ok = async () => {
      sent++;
      return { content: [{ type: "text", text: "fine" }] };
    };
    const first = governor.startRun();
    await first.call({ tool: "list", args: { page: 1 } }, ok);
    const miss = await first.call({ tool: "get_note", args: { id: "a1" } }, async () => {
      sent++;
      return failing('No note with id "a1"');
    });
    expect(miss.kind).toBe("model");
    first.end();
    const second = governor.startRun({ continues: first });
    await second.call({ tool: "list", args: { page: 2 } }, ok);
    // The correction budget (1) went on the first run's correction: this failure gets none.
    const again = await second.call({ tool: "find", args: { q: "x" } }, async () => {
      sent++;
      return failing("Invalid value for parameter q: expected a date");
    });
    expect(again).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(again.kind === "stop" && again.summary.budget).toBe("corrections");
    expect(second.summary()).toMatchObject({ calls: 2 });
    // A third run goes on from the second, and so from the first too: 4 calls were made.
    const third = governor.startRun({ continues: second });
    const refused = await third.call({ tool: "list", args: { page: 3 } }, ok);
    expect(sent).toBe(4);
    expect(refused).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(refused.kind === "stop" && refused.summary.budget).toBe("calls");
    expect(third.summary().calls).toBe(0);
  });

  it("carries the model's repeat counts: a failure told twice ends in repeated_failure the third time", async () => {
    const governor = createGovernor(
      { tools: { get_note: { effect: "read_only" } } },
      { metrics: false },
    );
    const miss = (run: ReturnType<typeof governor.startRun>, id: string) =>
      run.call({ tool: "get_note", args: { id } }, async () => failing(`No note with id "${id}"`));
    const first = governor.startRun();
    expect((await miss(first, "a1")).kind).toBe("model");
    expect((await miss(first, "b22")).kind).toBe("model");
    first.end();
    const next = governor.startRun({ continues: first });
    expect(await miss(next, "c333")).toMatchObject({ kind: "stop", reason: "repeated_failure" });
    // A run that does not go on from it tells the model again.
    expect((await miss(governor.startRun(), "d4444")).kind).toBe("model");
  });

  it("ends no later than the run it goes on from (wallTimeMs 20 s: a run started at 15 s refuses a call at 25 s)", async () => {
    const clock = { now: 1_000_000 };
    const governor = createGovernor(
      { budgets: { wallTimeMs: 20_000 }, tools: { "*": { effect: "read_only" } } },
      { now: () => clock.now, metrics: false },
    );
    const first = governor.startRun();
    clock.now += 15_000;
    first.end();
    const next = governor.startRun({ continues: first });
    clock.now += 10_000;
    let sent = 0;
    const late = await next.call({ tool: "list" }, async () => {
      sent++;
      return 1;
    });
    expect(sent).toBe(0);
    expect(late).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
    expect(late.kind === "stop" && late.summary.budget).toBe("wallTime");
  });

  it("a run started going on from one whose calls budget is spent refuses its first call", async () => {
    const governor = createGovernor({ budgets: { calls: 2 } }, { metrics: false });
    const first = governor.startRun();
    await first.call({ tool: "t", args: { n: 1 } }, async () => 1);
    await first.call({ tool: "t", args: { n: 2 } }, async () => 2);
    first.end();
    const run = governor.startRun({ continues: first });
    let sent = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      sent++;
      return 1;
    });
    expect(sent).toBe(0);
    expect(outcome.kind === "stop" && outcome.reason).toBe("budget_exhausted");
  });

  it("refuses what is not an ended run of this governor that no other run goes on from, saying what it takes", () => {
    const governor = createGovernor({}, { metrics: false });
    const accepted =
      /continues must be a run this governor started, that has ended and that no other run goes on from yet/;
    expect(() => governor.startRun({ continues: {} as never })).toThrow(accepted);
    expect(() => governor.startRun({ continues: "run-1" as never })).toThrow(/got a string/);
    const looksLikeOne = { ...governor.startRun(), ended: true };
    expect(() => governor.startRun({ continues: looksLikeOne as never })).toThrow(
      /not a run of startRun/,
    );
    const other = createGovernor({}, { metrics: false }).startRun();
    other.end();
    expect(() => governor.startRun({ continues: other })).toThrow(/another governor started/);
    const going = governor.startRun();
    expect(() => governor.startRun({ continues: going })).toThrow(/still going on/);
    going.end();
    const next = governor.startRun({ continues: going });
    expect(next.ended).toBe(false);
    expect(() => governor.startRun({ continues: going })).toThrow(
      new RegExp(`run ${next.id} already goes on from`),
    );
    try {
      governor.startRun({ continues: going });
    } catch (error) {
      expect(error).toMatchObject({ code: "invalid_options" });
    }
  });
});

describe("attack28: a stop in the proxy's window does not reset the repeat rule of other tools", () => {
  // The fresh run after a stop carried the window's budgets but not its fingerprint counts, so a
  // failure of search_notes the model was told twice was new again once another tool's stop (here
  // get_note's `forbidden`, scoped to that tool) ended the run: the model got a third and a fourth
  // correction of the same failure in one window, and never the repeated_failure stop. The next
  // run now goes on from the stopped one (`startRun({ continues })`), its repeat counts included.
  it("search_notes failing the same way four times in one window stops it by the third", async () => {
    const clock = { now: Date.now() };
    const { session, logs } = await windowSession(
      { tools: { "*": { effect: "read_only" } } },
      clock,
      {
        scenario: {
          get_note: [{ kind: "error", text: "Permission denied: you cannot read notes" }],
        },
      },
    );
    const search = (limit: number) =>
      session.callTool({ name: "search_notes", arguments: { query: "x", limit } });
    await search(0);
    await search(99);
    await session.callTool({ name: "get_note", arguments: { id: "welcome" } });
    expect(logs.at(-1)?.data).toMatchObject({ reason: "forbidden", scope: "tool" });
    await search(-1);
    await search(500);
    expect(logs.some((l) => l.data.reason === "repeated_failure")).toBe(true);
  });
});

describe("attack28: a stop in the proxy's window does not refill its wall time", () => {
  it("wallTimeMs 20 s in a 60 s window: a stop at 15 s, and a call at 25 s is past the window's wall time", async () => {
    const clock = { now: Date.now() };
    const { session, logs } = await windowSession(
      { budgets: { wallTimeMs: 20_000 }, tools: { "*": { effect: "read_only" } } },
      clock,
      { timeoutMs: 1_000 },
    );
    expect(
      (await session.callTool({ name: "search_notes", arguments: { query: "a" } })).isError,
    ).toBeFalsy();
    clock.now += 15_000;
    for (const id of ["nope-1", "nope-2", "nope-3"]) {
      await session.callTool({ name: "get_note", arguments: { id } });
    }
    expect(logs.at(-1)?.data).toMatchObject({ reason: "repeated_failure", scope: "tool" });
    clock.now += 10_000;
    const late = await session.callTool({ name: "search_notes", arguments: { query: "b" } });
    expect(late.isError).toBe(true);
  });
});
