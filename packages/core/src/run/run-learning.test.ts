// Issue 12.5: learning from outcomes, through real runs with the memory store.
import { describe, expect, it } from "vitest";
import { fingerprint } from "../judge/fingerprint.ts";
import { learnedKey } from "../judge/learned.ts";
import type { PolicyInput } from "../policy/policy.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import type { DecisionEvent, GovernorEvent } from "../telemetry/events.ts";
import { createGovernor } from "./governor.ts";
import type { CallOutcome } from "./types.ts";

const failure = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });
const success = (t: string) => ({ content: [{ type: "text", text: t }] });
// Read as an argument error; in these runs no argument the model tries makes it go away.
const NEVER_FIXED = "Invalid value for field 'owner': not allowed";

/** A store that counts the learning calls it gets. */
function tapped(inner: Store = createMemoryStore()) {
  const calls: string[] = [];
  const store: Store = {
    get: (k) => inner.get(k),
    set: (k, v, t) => inner.set(k, v, t),
    increment: (k, b, t) => inner.increment(k, b, t),
    claim: (k, h, o) => inner.claim(k, h, o),
    settle: (k, s, o) => inner.settle(k, s, o),
    entry: (k) => inner.entry(k),
    outcome: (k) => {
      calls.push(`outcome ${k}`);
      return inner.outcome?.(k);
    },
    addOutcome: (k, f, o) => {
      calls.push(`add ${f}`);
      return inner.addOutcome?.(k, f, o) as ReturnType<NonNullable<Store["addOutcome"]>>;
    },
  };
  return { store, calls };
}

function setup(policy: PolicyInput = {}, store: Store = createMemoryStore()) {
  const events: GovernorEvent[] = [];
  let t = 1_000_000;
  const gov = createGovernor(
    // The breaker would open after five failures in a row: these tests look at learning alone.
    {
      ...policy,
      tools: { "*": { effect: "read_only", breaker: { threshold: 1_000 } }, ...policy.tools },
    },
    { store, metrics: false, random: () => 0, now: () => t, onEvent: (e) => events.push(e) },
  );
  const tick = (ms: number) => {
    t += ms;
  };
  return { gov, events, tick };
}

/** One run where the model keeps correcting `tool` and the same failure comes back each time. */
async function futileCorrections(gov: ReturnType<typeof setup>["gov"], tool = "save") {
  const run = gov.startRun();
  const outcomes: CallOutcome<unknown>[] = [];
  for (let i = 0; i < 3 && !run.ended; i++) {
    outcomes.push(
      await run.call({ tool, args: { owner: `o${i}` } }, async () => failure(NEVER_FIXED)),
    );
  }
  run.end();
  return outcomes;
}

const decisions = (events: GovernorEvent[]) =>
  events.filter((e): e is DecisionEvent => e.type === "decision");

describe("learning from outcomes in a run", () => {
  it("demotes a correction the model never gets right to a stop, visible in the events", async () => {
    const { gov, events } = setup();
    // Each run: correct, same failure (futile), correct, same failure (futile), repeated stop.
    const first = await futileCorrections(gov);
    expect(
      first.map((o) => (o.kind === "model" ? o.action : o.kind === "stop" && o.reason)),
    ).toEqual(["correct_arguments", "correct_arguments", "repeated_failure"]);
    await futileCorrections(gov);
    // Four futile corrections now: the next occurrence stops at once.
    const third = await futileCorrections(gov);
    expect(third).toHaveLength(1);
    const stop = third[0];
    expect(stop?.kind === "stop" && stop.reason).toBe("learned_futile");
    const last = decisions(events).at(-1);
    expect(last?.reason).toBe("learned_futile");
    expect(last?.cause).toBe("invalid_argument");
    expect(last?.learned).toEqual({ from: "correct_arguments", to: "stop", paid: 0, futile: 4 });
    expect(last?.input?.learned?.correct_futile).toBe(4);
  });

  it("lists what was learned with the demotions it causes, and resets it by server and tool", async () => {
    const { gov } = setup();
    for (let i = 0; i < 2; i++) await futileCorrections(gov, "save");
    await futileCorrections(gov, "load");
    const entries = await gov.learned();
    expect(entries.map((e) => [e.tool, e.counts.correct_futile, e.demotes])).toEqual([
      ["load", 2, {}],
      ["save", 4, { correct_arguments: "stop" }],
    ]);
    expect(entries[0]?.server).toBeUndefined();
    await expect(gov.learned({ limit: 0 })).rejects.toThrow(/limit must be a positive integer/);
    expect(await gov.resetLearned({ server: "elsewhere" })).toBe(0);
    expect(await gov.resetLearned({ tool: "save" })).toBe(1);
    expect((await gov.learned()).map((e) => e.tool)).toEqual(["load"]);
    // Forgotten: the next run corrects again.
    expect((await futileCorrections(gov, "save"))[0]?.kind).toBe("model");
    expect(await gov.resetLearned()).toBe(2);
    expect(await gov.learned()).toEqual([]);
  });

  it("keeps a correction that pays off, and learns it as paid", async () => {
    const store = createMemoryStore();
    const { gov } = setup({}, store);
    for (let i = 0; i < 6; i++) {
      const run = gov.startRun();
      const bad = await run.call({ tool: "get", args: { id: "x" } }, async () =>
        failure("Invalid value for field 'id': must be a number"),
      );
      expect(bad.kind).toBe("model");
      const good = await run.call({ tool: "get", args: { id: 1 } }, async () => success("ok"));
      expect(good.kind).toBe("ok");
      run.end();
    }
    const [record] = store.listOutcomes(10);
    expect(record?.counts).toEqual({ correct_paid: 6 });
  });

  it("demotes a retry that never recovers to a switch when the policy names an alternative, then learns the switch", async () => {
    const store = createMemoryStore();
    const { gov } = setup(
      {
        tools: {
          search: {
            effect: "read_only",
            alternatives: ["search_v2"],
            retry: { attempts: 2, baseDelayMs: 0 },
          },
        },
      },
      store,
    );
    const actions: string[] = [];
    for (let i = 0; i < 6; i++) {
      const run = gov.startRun();
      const out = await run.call({ tool: "search" }, async () =>
        failure("503 Service Unavailable"),
      );
      actions.push(out.kind === "model" ? out.action : out.kind);
      // The model takes the alternative, which works.
      expect((await run.call({ tool: "search_v2" }, async () => success("hits"))).kind).toBe("ok");
      run.end();
    }
    // Retries exhausted -> switch (policy) for four runs, then the learned switch at once.
    expect(actions).toEqual(Array(6).fill("switch_tool"));
    const [record] = store.listOutcomes(10);
    expect(record?.counts.retry_futile).toBeCloseTo(4, 9);
    expect(record?.counts.retry_paid).toBeUndefined();
    // Six switches all paid off: the switch is never demoted.
    expect(record?.counts.switch_paid).toBeCloseTo(6, 9);
  });

  it("an alternative cut by an abort or failing on the host's side tells nothing of the switch", async () => {
    // As for retries: a cancelled run or a protocol failure says nothing of whether switching
    // pays off; four cancelled runs must not demote the switch for every later run.
    const store = createMemoryStore();
    const { gov } = setup(
      { tools: { search: { effect: "read_only", alternatives: ["search_v2"] } } },
      store,
    );
    const deprecated = "This tool is deprecated, use search_v2 instead";
    for (const how of ["abort", "host"] as const) {
      const ac = new AbortController();
      const run = gov.startRun({ signal: ac.signal });
      const out = await run.call({ tool: "search" }, async () => failure(deprecated));
      expect(out).toMatchObject({ kind: "model", action: "switch_tool" });
      const alt = await run
        .call({ tool: "search_v2" }, async () => {
          if (how === "host") throw Object.assign(new Error("Method not found"), { code: -32601 });
          ac.abort();
          return success("late");
        })
        .catch((error: unknown) => ({ kind: "thrown", error }));
      expect(alt.kind).not.toBe("ok");
      run.end();
    }
    expect(store.listOutcomes(10)).toEqual([]);
  });

  it("the policy wins: a policy rule's decision is never demoted", async () => {
    const { gov } = setup({
      tools: {
        "*": { effect: "read_only", breaker: { threshold: 1_000 } },
        save: { rules: [{ match: "not allowed", action: "correct_arguments" }] },
      },
    });
    for (let i = 0; i < 4; i++) await futileCorrections(gov);
    const outcomes = await futileCorrections(gov);
    expect(outcomes[0]?.kind).toBe("model");
  });

  it("learning off (policy or per tool) never reads nor writes the learning store", async () => {
    for (const policy of [
      { learning: { enabled: false } },
      {
        tools: {
          "*": { effect: "read_only" as const, learn: false, breaker: { threshold: 1_000 } },
        },
      },
    ]) {
      const { store, calls } = tapped();
      const { gov } = setup(policy, store);
      for (let i = 0; i < 5; i++) await futileCorrections(gov);
      expect(calls).toEqual([]);
      const outcomes = await futileCorrections(gov);
      expect(outcomes[0]?.kind).toBe("model");
    }
  });

  it("a successful call that follows no failure never touches the learning store", async () => {
    const { store, calls } = tapped();
    const { gov } = setup({}, store);
    for (let i = 0; i < 20; i++) {
      const run = gov.startRun();
      for (let j = 0; j < 5; j++) {
        expect((await run.call({ tool: "get", args: { j } }, async () => success("ok"))).kind).toBe(
          "ok",
        );
      }
      run.end();
    }
    expect(calls).toEqual([]);
    // After a failure in a run, a success with nothing awaiting it touches nothing either.
    const run = gov.startRun();
    await run.call({ tool: "other" }, async () => failure("Invalid value for field 'a'"));
    const before = calls.length;
    await run.call({ tool: "get" }, async () => success("ok"));
    expect(calls.length).toBe(before);
  });

  it("never switches an uncertain write: a keyed mutation whose retries never recover stops", async () => {
    const store = createMemoryStore();
    const { gov, events } = setup(
      {
        tools: {
          pay: {
            effect: "mutating",
            alternatives: ["pay_v2"],
            idempotency: { honorsKeys: true },
            retry: { attempts: 2, baseDelayMs: 0 },
          },
        },
      },
      store,
    );
    // Learned before: four calls whose retries of this timeout never recovered.
    const print = fingerprint({ tool: "pay", channel: "tool", text: "504 Gateway Timeout" });
    const add = { now: 1_000_000, halfLifeMs: 86_400_000, ttlMs: 86_400_000, by: 4 };
    store.addOutcome(learnedKey(undefined, "pay", print), "retry_futile", add);
    const run = gov.startRun();
    let attempts = 0;
    const out = await run.call({ tool: "pay", args: { amount: 5 } }, async () => {
      attempts++;
      return failure("504 Gateway Timeout");
    });
    expect(attempts).toBe(1);
    // The write may have happened: the stop says so and names its key; the demotion stays on
    // record in the decision.
    expect(out).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(out.kind === "stop" && out.idempotencyKey).toMatch(/^gk_/);
    const decided = events.find((e): e is DecisionEvent => e.type === "decision");
    expect(decided).toMatchObject({ action: "stop", reason: "uncertain_mutation" });
    expect(decided?.learned).toMatchObject({ to: "stop" });
  });

  it("a store that cannot answer for learning changes nothing of the run, and reaches nobody", async () => {
    const inner = createMemoryStore();
    const broken: Store = {
      get: (k) => inner.get(k),
      set: (k, v, t) => inner.set(k, v, t),
      increment: (k, b, t) => inner.increment(k, b, t),
      claim: (k, h, o) => inner.claim(k, h, o),
      settle: (k, s, o) => inner.settle(k, s, o),
      entry: (k) => inner.entry(k),
      outcome: () => Promise.reject(new Error("redis://secret@10.0.0.5 down")),
      addOutcome: () => {
        throw new Error("redis://secret@10.0.0.5 down");
      },
    };
    let hostErrors = 0;
    const gov = createGovernor(
      { tools: { "*": { effect: "read_only" } } },
      {
        store: broken,
        metrics: false,
        onHostError: () => {
          hostErrors++;
          return undefined;
        },
      },
    );
    for (let i = 0; i < 5; i++) {
      const outcomes = await futileCorrections(gov);
      expect(outcomes.map((o) => o.kind)).toEqual(["model", "model", "stop"]);
      for (const o of outcomes) {
        if (o.kind !== "ok")
          expect(o.result.content[0].text).not.toMatch(/secret|10\.0\.0\.5|redis/);
      }
    }
    expect(hostErrors).toBe(0);
  });

  it("a learning store that never answers holds no call past storeTimeoutMs, and nothing is learned", async () => {
    const inner = createMemoryStore();
    const never = () => new Promise<never>(() => {});
    const hanging: Store = {
      get: (k) => inner.get(k),
      set: (k, v, t) => inner.set(k, v, t),
      increment: (k, b, t) => inner.increment(k, b, t),
      claim: (k, h, o) => inner.claim(k, h, o),
      settle: (k, s, o) => inner.settle(k, s, o),
      entry: (k) => inner.entry(k),
      outcome: never,
      addOutcome: never,
    };
    const gov = createGovernor(
      { tools: { "*": { effect: "read_only" } } },
      { store: hanging, metrics: false, storeTimeoutMs: 50 },
    );
    // Unbounded, either call would never resolve (and the test would time out).
    const run = gov.startRun();
    const bad = await run.call({ tool: "save", args: { owner: "a" } }, async () =>
      failure(NEVER_FIXED),
    );
    expect(bad.kind).toBe("model");
    // The correction awaits its outcome: the success writes it (and waits for the bound only).
    const good = await run.call({ tool: "save", args: { owner: "b" } }, async () => success("ok"));
    expect(good.kind).toBe("ok");
    expect(run.summary().calls).toBe(2);
    run.end();
  });

  it("observe-only runs read what was learned but record nothing", async () => {
    const { store, calls } = tapped();
    const { gov } = setup({ observeOnly: true }, store);
    for (let i = 0; i < 3; i++) await futileCorrections(gov);
    expect(calls.some((c) => c.startsWith("outcome "))).toBe(true);
    expect(calls.filter((c) => c.startsWith("add "))).toEqual([]);
  });
});
