import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Decision } from "../judge/decide.ts";
import { learnedKey } from "../judge/learned.ts";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import { OutcomeTracker, type StoreGuard } from "./outcome-tracker.ts";

const guard: StoreGuard = (_op, fn) => fn();
const correct: Decision = {
  action: "correct_arguments",
  reason: "invalid_argument",
  certainty: "failed",
};
const stop: Decision = {
  action: "stop",
  reason: "misconfigured",
  certainty: "failed",
  cause: "misconfigured",
  personResolvable: true,
};

/** A memory store that records each learned addition as `key field`. */
function recordingStore(): { adds: string[]; store: Store } {
  const adds: string[] = [];
  const inner = createMemoryStore();
  const store: Store = {
    ...inner,
    outcome: (k) => inner.outcome(k),
    addOutcome: (k, f, o) => {
      adds.push(`${k} ${f}`);
      return inner.addOutcome(k, f, o);
    },
  };
  return { adds, store };
}

describe("OutcomeTracker: corrections that await their tool's next call", () => {
  it("property: each tool's correction is settled by that tool's next call alone, as one map by server and tool would (no server and '' are one)", () => {
    const policy = loadPolicy({});
    const servers = [undefined, "", "s"] as const;
    const tools = ["a", "b"] as const;
    const op = fc.record({
      kind: fc.constantFrom("correct", "fail", "stop", "succeed"),
      // Mostly one server, so that two tools' corrections meet often.
      server: fc.oneof(
        { weight: 6, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constantFrom(...servers) },
      ),
      tool: fc.constantFrom(...tools),
      print: fc.constantFrom("p1", "p2"),
      first: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const { adds, store } = recordingStore();
        const tracker = new OutcomeTracker({ store, now: () => 1_000 });
        // The model: one map by server ("" for none) and tool.
        const waiting = new Map<string, { key: string; print: string }>();
        const expected: string[] = [];
        for (const [i, o] of ops.entries()) {
          const p = resolveToolPolicy(policy, o.tool, o.server);
          const id = `${o.server ?? ""}\u0000${o.tool}`;
          const call = { i };
          const key = learnedKey(p.server, p.tool, o.print);
          if (o.kind === "succeed") {
            tracker.succeeded(call, p, guard);
            const w = waiting.get(id);
            if (w) expected.push(`${w.key} correct_paid`);
            waiting.delete(id);
            continue;
          }
          tracker.decided(call, p, o.print, o.kind === "correct" ? correct : stop, o.first, guard);
          // Only a call's first failure settles what waited for its tool.
          const w = o.first ? waiting.get(id) : undefined;
          if (o.first) waiting.delete(id);
          if (w && w.print === o.print) expected.push(`${w.key} correct_futile`);
          if (o.kind === "correct") waiting.set(id, { key, print: o.print });
        }
        expect(adds).toEqual(expected);
      }),
      { numRuns: 200 },
    );
  });

  it("a tool's correction made again after another tool's waited is the only one of that tool", () => {
    const policy = loadPolicy({});
    const { adds, store } = recordingStore();
    const tracker = new OutcomeTracker({ store, now: () => 1_000 });
    const [a, b] = [resolveToolPolicy(policy, "a"), resolveToolPolicy(policy, "b")];
    tracker.decided({}, a, "p1", correct, true, guard);
    tracker.decided({}, b, "p1", correct, true, guard);
    // a's next call takes a's correction (another failure: nothing learned).
    tracker.decided({}, a, "p2", stop, true, guard);
    // b corrected again after a retry (not the call's first failure: nothing taken first), this
    // correction replaces b's first.
    tracker.decided({}, b, "p2", correct, false, guard);
    tracker.decided({}, b, "p2", stop, true, guard);
    // Nothing of b waits any more: the first correction (p1) was replaced, not kept aside.
    tracker.decided({}, b, "p1", stop, true, guard);
    expect(adds).toEqual([`${learnedKey(undefined, "b", "p2")} correct_futile`]);
  });
});
