// Judging a failure goes on at once after each step a store answers with a value, and after the
// promise when it answers with one: both ways must come to the same decisions, outcomes, events
// and store contents (the ledger, the breakers, the retry budget, what was learned).
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../store/memory-store.ts";
import type { Store } from "../store/store.ts";
import type { GovernorEvent } from "../telemetry/events.ts";
import { createGovernor } from "./governor.ts";

const failure = (text: string) => ({ content: [{ type: "text", text }], isError: true });
const success = (text: string) => ({ content: [{ type: "text", text }] });

/** The memory store, every answer a promise (as a remote store's). */
function pending(inner: Store): Store {
  return {
    get: async (k) => inner.get(k),
    set: async (k, v, t) => inner.set(k, v, t),
    increment: async (k, b, t) => inner.increment(k, b, t),
    claim: async (k, h, o) => inner.claim(k, h, o),
    settle: async (k, s, o) => inner.settle(k, s, o),
    entry: async (k) => inner.entry(k),
    outcome: async (k) => inner.outcome?.(k),
    addOutcome: async (k, f, o) =>
      (await inner.addOutcome?.(k, f, o)) as Awaited<ReturnType<NonNullable<Store["addOutcome"]>>>,
    listOutcomes: async (n) => (await inner.listOutcomes?.(n)) ?? [],
  };
}

/** Failures of every kind, in runs that retry, correct, switch, stop, learn and open breakers. */
async function script(store: Store) {
  const events: GovernorEvent[] = [];
  const t = 1_000_000;
  const governor = createGovernor(
    {
      tools: {
        search: { effect: "read_only", alternatives: ["search_v2"], retry: { baseDelayMs: 0 } },
        save: { effect: "mutating", idempotency: { honorsKeys: true }, retry: { baseDelayMs: 0 } },
        append: { effect: "mutating", retry: { baseDelayMs: 0 } },
        down: { effect: "read_only", retry: { attempts: 1 }, breaker: { threshold: 2 } },
        "*": { effect: "read_only", retry: { baseDelayMs: 0 } },
      },
      budgets: { failures: 6 },
    },
    {
      store,
      metrics: false,
      random: () => 0.5,
      now: () => t,
      onEvent: (e) => events.push(e),
      onHostError: () => undefined,
    },
  );
  const texts = [
    "503 Service Unavailable",
    "Invalid value for field 'owner': not allowed",
    "Permission denied: you do not have access to this repository",
    "Tool lookup_v1 is not supported, use lookup_v2",
    "connect ECONNREFUSED 10.0.0.7:5432",
    "Rate limit exceeded, retry after 0 seconds",
    "Note not found: drafts/today",
    "The request timed out",
    "Internal error",
  ];
  const outcomes: unknown[] = [];
  for (let round = 0; round < 4; round++) {
    for (const tool of ["search", "save", "append", "lookup", "down"]) {
      // Keys in a scope of the run's own: the same in both runs of the script.
      const runId = `r${round}-${tool}`;
      const run = governor.startRun({ runId, idempotencyScope: runId });
      for (let i = 0; i < texts.length && !run.ended; i++) {
        const text = texts[(i + round) % texts.length] as string;
        let attempt = 0;
        const call = { tool, args: { i, round }, callId: `c${i}` };
        const outcome = await run.call(call, async () => {
          attempt += 1;
          // A retried 503 recovers on its third attempt in odd rounds.
          if (tool === "down") return failure("503 Service Unavailable");
          return round % 2 === 1 && attempt === 3 ? success("done") : failure(text);
        });
        outcomes.push({ tool, text, attempt, outcome });
      }
      outcomes.push(run.end());
    }
  }
  // Corrections the model never gets right: learned futile, then demoted to a stop.
  for (let k = 0; k < 3; k++) {
    const runId = `futile-${k}`;
    const run = governor.startRun({ runId, idempotencyScope: runId });
    for (let i = 0; i < 3 && !run.ended; i++) {
      const outcome = await run.call({ tool: "form", args: { owner: `o${i}` } }, async () =>
        failure("Invalid value for field 'owner': not allowed"),
      );
      outcomes.push({ tool: "form", outcome });
    }
    outcomes.push(run.end());
  }
  const learned = await governor.learned({ limit: 100 });
  return { outcomes, events, learned };
}

describe("judging with a store that answers at once or later", () => {
  it("comes to the same outcomes, events, breakers and learning", async () => {
    const now = await script(createMemoryStore());
    const later = await script(pending(createMemoryStore()));
    expect(later.outcomes).toEqual(now.outcomes);
    expect(later.events).toEqual(now.events);
    expect(later.learned).toEqual(now.learned);
    // The script reaches what it is meant to: every action, learning, the breaker, a budget.
    const text = JSON.stringify(now.outcomes);
    for (const seen of [
      '"kind":"model"',
      '"kind":"stop"',
      '"kind":"ok"',
      '"action":"switch_tool"',
      '"action":"correct_arguments"',
      "circuit_open",
      "budget_exhausted",
      "uncertain_mutation",
      "learned_futile",
    ]) {
      expect(text.includes(seen), seen).toBe(true);
    }
    expect(now.learned.length).toBeGreaterThan(0);
    expect(now.events.some((e) => e.type === "decision" && e.action === "retry_dependency")).toBe(
      true,
    );
  });
});
