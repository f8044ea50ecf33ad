/**
 * attack29: `startRun({ continues: run })` gives one task split into runs by stops no more budget
 * or tellings of the same failure than one run would (docs/budgets.md): the new run starts with
 * what the stopped one had spent and told. But a call of the stopped run that was awaiting its
 * store (here the learned-outcome read, as a store across the network takes a while) when another
 * call stopped the run went on to decide after that: it spent a failure and a correction, and
 * told the model its failure once more, in a run that had ended and that the next run had already
 * gone on from. With a failures budget of 2 the task got three failures decided; with the repeat
 * rule's 3 the same failure was told three times. `commit` now decides nothing in an ended run:
 * the late call gets the run's end.
 */
import { createGovernor, createMemoryStore } from "@governor/core";
import { describe, expect, it } from "vitest";

const text = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });
const INVALID = "invalid input: id must be a positive integer";

/** A memory store whose learned-outcome reads wait for `release` once `hold()` was called. */
function slowLearnedStore() {
  const memory = createMemoryStore();
  let held = false;
  let release = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const store = new Proxy(memory, {
    get(target, name) {
      if (name === "outcome") {
        return async (key: string) => {
          if (held) await gate;
          return target.outcome(key);
        };
      }
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store, hold: () => (held = true), release: () => release() };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

function setup(budgets: object = {}) {
  const { store, hold, release } = slowLearnedStore();
  const governor = createGovernor(
    { budgets, tools: { "*": { effect: "read_only" } } },
    { store, metrics: false, random: () => 0.5 },
  );
  return { governor, hold, release };
}

describe("attack29: a call of a stopped run decides nothing after the next run went on from it", () => {
  it("failures budget 2: a correction the stopped run decided late is no third failure of the task", async () => {
    const { governor, hold, release } = setup({ failures: 2 });
    hold();
    const a = governor.startRun();
    // A correction awaits its learned read while another call of the run stops it.
    const late = a.call({ tool: "get_note", args: { id: "x" } }, async () => text(INVALID));
    await tick();
    const stopped = await a.call({ tool: "list_notes" }, async () =>
      text("403 Forbidden: permission denied"),
    );
    expect(stopped).toMatchObject({ kind: "stop", reason: "forbidden" });
    expect(a.ended).toBe(true);
    const b = governor.startRun({ continues: a });
    release();
    // The late call gets the run's end, not a correction.
    expect(await late).toMatchObject({ kind: "stop", reason: "forbidden" });
    // The task decided one failure (the stop); the next is its second, a correction; the third
    // is budget_exhausted.
    const next = () =>
      b.call({ tool: "get_note", args: { id: "y" } }, async () => text("not found: note y"));
    expect(await next()).toMatchObject({ kind: "model", action: "correct_arguments" });
    expect(await next()).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
  });

  it("maxRepeats 3: a failure the stopped run told late is not told a third time by the next run", async () => {
    const { governor, hold, release } = setup();
    const a = governor.startRun();
    const get = (run: typeof a, id: string) =>
      run.call({ tool: "get_note", args: { id } }, async () => text(INVALID));
    expect(await get(a, "1")).toMatchObject({ kind: "model", action: "correct_arguments" });
    hold();
    const late = get(a, "2");
    await tick();
    await a.call({ tool: "list_notes" }, async () => text("403 Forbidden: permission denied"));
    expect(a.ended).toBe(true);
    const b = governor.startRun({ continues: a });
    release();
    const told = [await late, await get(b, "3"), await get(b, "4")].filter(
      (o) => o.kind === "model",
    );
    // Told twice in all (the first, then one in the next run); the third is the repeat rule's stop.
    expect(told).toHaveLength(1);
  });
});

describe("attack29: the refusals of continues hold", () => {
  const stop = (run: ReturnType<ReturnType<typeof createGovernor>["startRun"]>) =>
    run.call({ tool: "list_notes" }, async () => text("403 Forbidden: permission denied"));

  it("a run continued twice, a continued run's ancestor, a run still going on, another governor's run", async () => {
    const { governor } = setup();
    const other = createGovernor({}, { metrics: false });
    const a = governor.startRun();
    expect(() => governor.startRun({ continues: a })).toThrow(/still going on/);
    await stop(a);
    expect(() => other.startRun({ continues: a })).toThrow(/another governor/);
    const b = governor.startRun({ continues: a });
    expect(() => governor.startRun({ continues: a })).toThrow(/already goes on from/);
    b.end();
    const c = governor.startRun({ continues: b });
    // a's descendant c goes on; a itself is still taken.
    expect(() => governor.startRun({ continues: a })).toThrow(/already goes on from/);
    c.end();
    expect(() => governor.startRun({ continues: b })).toThrow(/already goes on from/);
  });

  it("the deadline of a chain is the first run's", async () => {
    const clock = { now: 1_000_000 };
    const governor = createGovernor(
      { budgets: { wallTimeMs: 10_000 }, tools: { "*": { effect: "read_only" } } },
      { now: () => clock.now, metrics: false },
    );
    const a = governor.startRun();
    clock.now += 6_000;
    a.end();
    const b = governor.startRun({ continues: a, deadline: clock.now + 60_000 });
    clock.now += 6_000; // 12 s after a started: past its wall time
    const outcome = await b.call({ tool: "get_note" }, async () => ({ content: [] }));
    expect(outcome).toMatchObject({ kind: "stop", reason: "budget_exhausted" });
  });
});
