// Issue 12.5: a small version of the replay simulation (`pnpm simulate`), through the real
// governor and memory store: learning never adds retries of what a person must fix or of a
// write, only demotes, and wastes fewer calls.
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  loadTemplates,
  type SimulationReport,
  simulateLearning,
  type Template,
} from "../scripts/learning-simulation.ts";

const root = resolve(import.meta.dirname, "..");
const SEED = 7;

describe("the learning simulation (small)", () => {
  let templates: Template[];
  let without: SimulationReport;
  let withLearning: SimulationReport;

  beforeAll(async () => {
    const all = loadTemplates(
      [
        resolve(root, "test/corpus/tool-errors.jsonl"),
        resolve(root, "test/corpus/unseen-tool-errors.jsonl"),
      ],
      SEED,
    );
    // The templates learning can help with: the first decision on them is a correction or a
    // retry, and they never recover (a person must act).
    const once = await simulateLearning({
      templates: all,
      occurrences: 1,
      seed: SEED,
      learning: false,
    });
    const learnable = new Set(
      once.results
        .filter((r) => r.label === "stop" && r.decision !== "stop")
        .map((r) => r.template),
    );
    expect(learnable.size).toBeGreaterThan(0);
    // Every 12th template besides (each label, writes among them) keeps the run small, and every
    // write that fails as a transient dependency would (so the check of writes never retried
    // has something to check).
    templates = all.filter(
      (t, i) =>
        learnable.has(t.id) || i % 12 === 0 || (t.mutating && t.label === "retry_dependency"),
    );
    expect(new Set(templates.map((t) => t.label)).size).toBe(4);
    expect(templates.some((t) => t.mutating)).toBe(true);
    const options = { templates, occurrences: 8, seed: SEED };
    without = await simulateLearning({ ...options, learning: false });
    withLearning = await simulateLearning({ ...options, learning: true });
  }, 120_000);

  it("never adds a retry of a person-only template or of a write", () => {
    expect(withLearning.personOnlyRetries).toBeLessThanOrEqual(without.personOnlyRetries);
    expect(withLearning.retries).toBeLessThanOrEqual(without.retries);
    // Writes that fail as a transient dependency would would recover if retried; without a key,
    // neither the rules nor learning may repeat them.
    expect(templates.some((t) => t.mutating && t.label === "retry_dependency")).toBe(true);
    expect(without.mutationRetries).toBe(0);
    expect(withLearning.mutationRetries).toBe(0);
  });

  it("wastes fewer calls and loses no recovery", () => {
    expect(withLearning.learnedOverrides).toBeGreaterThan(0);
    expect(without.learnedOverrides).toBe(0);
    expect(withLearning.wastedCalls).toBeLessThan(without.wastedCalls);
    expect(withLearning.recovered).toBe(without.recovered);
    expect(withLearning.accuracyAt["5"]).toBeGreaterThan(without.accuracyAt["5"] ?? 1);
    expect(withLearning.accuracyAt["1"]).toBe(without.accuracyAt["1"]);
  });

  it("only demotes: every decision learning changed became a learned stop or switch", () => {
    const before = new Map(without.results.map((r) => [`${r.template}#${r.occurrence}`, r]));
    let changed = 0;
    for (const r of withLearning.results) {
      const base = before.get(`${r.template}#${r.occurrence}`);
      expect(base).toBeDefined();
      if (base?.decision === r.decision) continue;
      changed += 1;
      expect(r.learned).toBe(true);
      expect(["stop", "switch_tool"]).toContain(r.decision);
      expect(["retry_dependency", "correct_arguments", "switch_tool"]).toContain(base?.decision);
    }
    expect(changed).toBe(withLearning.learnedOverrides);
  });

  it("is deterministic for a seed", async () => {
    const again = await simulateLearning({ templates, occurrences: 8, seed: SEED, learning: true });
    expect(again.results).toEqual(withLearning.results);
  });
});
