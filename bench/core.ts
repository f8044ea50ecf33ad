import { readFileSync } from "node:fs";
import { createGovernor, failureFromResult, loadPolicy } from "@governor/core";
import { assessFailure, classify, resolveToolPolicy } from "@governor/core/judge";
import { type Figure, figure, median } from "./stats.ts";

const corpus = readFileSync(new URL("../test/corpus/tool-errors.jsonl", import.meta.url), "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line) as { tool: string; text: string });

/**
 * Failures judged per second by `assessFailure` (classify, fingerprint, decide, redact, compose)
 * over the corpus, against the baseline a naive loop pays: handing the raw text to the model.
 */
export function benchDecisions(rounds = 20): Figure {
  const policy = loadPolicy({});
  const failures = corpus.map((e) => ({
    tool: resolveToolPolicy(policy, e.tool),
    failure: failureFromResult({ content: [{ type: "text", text: e.text }], isError: true }),
  }));
  let sink = 0;
  const ours: number[] = [];
  const base: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    for (const { tool, failure } of failures) {
      sink += assessFailure(failure, { policy, tool, effect: "read_only" }).fingerprint.length;
    }
    ours.push(failures.length / ((performance.now() - t) / 1000));
    t = performance.now();
    for (const { tool, failure } of failures) sink += `${tool.tool}: ${failure.text}`.length;
    base.push(failures.length / ((performance.now() - t) / 1000));
  }
  if (sink < 0) throw new Error("unreachable");
  return figure(median(ours), median(base), "failures/s", rounds * failures.length);
}

/** Per-call overhead of `run.call` around a no-op executor vs calling the executor directly. */
export async function benchRunCall(
  calls = 50_000,
): Promise<Figure & { oursUs: number; baselineUs: number }> {
  // Budgets wide enough for a batch, and distinct arguments: a batch measures calls, not stops.
  const governor = createGovernor(
    { tools: { noop: { effect: "read_only" } }, budgets: { calls: 1_000_000 } },
    { metrics: false },
  );
  const result = { content: [{ type: "text", text: "ok" }] };
  const execute = async () => result;
  const batch = 1_000;
  const ours: number[] = [];
  const base: number[] = [];
  for (let done = 0; done < calls; done += batch) {
    const run = governor.startRun();
    let t = performance.now();
    for (let i = 0; i < batch; i++) await run.call({ tool: "noop", args: { i } }, execute);
    ours.push(((performance.now() - t) * 1000) / batch);
    t = performance.now();
    for (let i = 0; i < batch; i++) await execute();
    base.push(((performance.now() - t) * 1000) / batch);
  }
  const o = median(ours);
  const b = median(base);
  return { ...figure(o, b, "us/call", calls), oursUs: o, baselineUs: b };
}

/**
 * Heap retained after one million runs (start, one call, end) on one governor, against the heap
 * before: shows that nothing per run outlives it. Needs `--expose-gc`.
 */
export async function benchMemory(runs = 1_000_000): Promise<Figure> {
  const gc = (globalThis as { gc?: () => void }).gc;
  const heap = () => {
    gc?.();
    gc?.();
    return process.memoryUsage().heapUsed / 1024 / 1024;
  };
  const governor = createGovernor({ tools: { t: { effect: "read_only" } } }, { metrics: false });
  const result = { content: [{ type: "text", text: "ok" }] };
  const before = heap();
  for (let i = 0; i < runs; i++) {
    const run = governor.startRun();
    await run.call({ tool: "t" }, async () => result);
    run.end();
  }
  const after = heap();
  return figure(Math.max(0, after - before), before, "MB", runs);
}

/**
 * Attempts sent when 100 concurrent runs hit a server that always answers 503, with 5 attempts per
 * call allowed: against the per-server retry budget (ratio 0.2, reserve 10) the baseline is what
 * the attempt cap alone would send (100 × 5).
 */
export async function benchRetryAmplification(runs = 100): Promise<Figure> {
  const attemptsPerCall = 5;
  const governor = createGovernor(
    {
      retryBudget: { ratio: 0.2, reserve: 10, windowMs: 60_000 },
      servers: {
        s: {
          tools: {
            t: { effect: "read_only", retry: { attempts: attemptsPerCall, baseDelayMs: 1 } },
          },
        },
      },
    },
    { metrics: false },
  );
  let attempts = 0;
  const failing = async () => {
    attempts += 1;
    return { content: [{ type: "text", text: "503 Service Unavailable" }], isError: true };
  };
  await Promise.all(
    Array.from({ length: runs }, () =>
      governor.startRun().call({ tool: "t", server: "s" }, failing),
    ),
  );
  return figure(attempts / runs, attemptsPerCall, "attempts/call", runs);
}

/**
 * The learned last stage (issue 27.2) side by side with the rule-only judge: `classify` on the
 * corpus texts no built-in rule matches (where the model decides), with the shipped text model
 * and with a model that knows no word (the old default). µs per text, median of rounds.
 */
export function benchLearnedStage(rounds = 20): Figure {
  const policy = loadPolicy({});
  const rulesOnly = { v: 1 as const, trainedOn: "nothing", bias: [0, 0, 0, 0], weights: {} };
  const texts = ["tool-errors.jsonl", "unseen-tool-errors.jsonl"].flatMap((file) =>
    readFileSync(new URL(`../test/corpus/${file}`, import.meta.url), "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { tool: string; text: string }),
  );
  const silent = texts
    .map((e) => ({
      tool: resolveToolPolicy(policy, e.tool),
      failure: failureFromResult({ content: [{ type: "text", text: e.text }], isError: true }),
    }))
    .filter(
      ({ tool, failure }) => classify(failure, tool, undefined, rulesOnly).source === "default",
    );
  let sink = 0;
  const ours: number[] = [];
  const base: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let t = performance.now();
    for (const { tool, failure } of silent) sink += classify(failure, tool).action.length;
    ours.push(((performance.now() - t) * 1000) / silent.length);
    t = performance.now();
    for (const { tool, failure } of silent) {
      sink += classify(failure, tool, undefined, rulesOnly).action.length;
    }
    base.push(((performance.now() - t) * 1000) / silent.length);
  }
  if (sink < 0) throw new Error("unreachable");
  return figure(median(ours), median(base), "µs/text", rounds * silent.length);
}
