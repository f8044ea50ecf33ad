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

  it("startRun refuses a spent budget that is not a non-negative integer of a counted budget", () => {
    const governor = createGovernor({}, { metrics: false });
    expect(() => governor.startRun({ spent: { calls: -1 } })).toThrow(/spent/);
    expect(() => governor.startRun({ spent: { calls: 1.5 } })).toThrow(/spent/);
    expect(() => governor.startRun({ spent: { wallTime: 1 } as never })).toThrow(/spent/);
    const run = governor.startRun({ spent: { calls: 100 } });
    expect(run.ended).toBe(false);
  });

  it("a run started with its calls budget spent refuses its first call (budget_exhausted)", async () => {
    const governor = createGovernor({ budgets: { calls: 2 } }, { metrics: false });
    const run = governor.startRun({ spent: { calls: 2 } });
    let sent = 0;
    const outcome = await run.call({ tool: "t" }, async () => {
      sent++;
      return 1;
    });
    expect(sent).toBe(0);
    expect(outcome.kind === "stop" && outcome.reason).toBe("budget_exhausted");
  });
});

describe("attack28: a stop in the proxy's window does not reset the repeat rule of other tools", () => {
  // it.fails: the fresh run after a stop carries the window's budgets (RunOptions.spent) but not
  // its fingerprint counts, so a failure of search_notes the model was told twice is new again
  // once another tool's stop (here get_note's `forbidden`, scoped to that tool) ends the run: the
  // model gets a third and a fourth correction of the same failure in one window, and never the
  // repeated_failure stop. Carrying the counts needs the run's repeat state handed on too.
  it.fails("search_notes failing the same way four times in one window stops it by the third", async () => {
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
