// The replay simulation of issue 12.5: a stream of runs in which failure templates from
// test/corpus recur, each behaving as its true label says, through the real governor and a
// memory store, with learning on and off. Deterministic for a seed. Run by
// scripts/simulate-learning.ts (`pnpm simulate`) and, small, by test/learning-simulation.test.ts.
import { readFileSync } from "node:fs";
import {
  createGovernor,
  createMemoryStore,
  type DecisionEvent,
  type GovernorEvent,
  type PolicyInput,
} from "@governor/core";
import { seededRandom } from "../packages/cli/src/demo-governed.ts";

/** The decisions a corpus label names. */
export type Label = "correct_arguments" | "retry_dependency" | "switch_tool" | "stop";

/** One failure template and how it behaves. */
export interface Template {
  readonly id: string;
  readonly server: string;
  readonly tool: string;
  readonly text: string;
  readonly label: Label;
  /** The tool writes (its retries after an unknown outcome are never safe). */
  readonly mutating: boolean;
  /** The policy names `<tool>_alt` as an alternative. */
  readonly hasAlternative: boolean;
  /** For a transient failure: failed attempts in an occurrence before the dependency recovers. */
  readonly recoverAfter: number;
}

/** Options of {@link simulateLearning}. */
export interface SimulationOptions {
  readonly templates: readonly Template[];
  /** Occurrences of each template in the stream. @default 20 */
  readonly occurrences?: number;
  readonly seed: number;
  readonly learning: boolean;
  /** Virtual time between two runs, in ms. @default 5_000 */
  readonly gapMs?: number;
  /** Most tool calls the model makes in one run. @default 4 */
  readonly maxTurns?: number;
}

/** What one occurrence of a template came to. */
export interface OccurrenceResult {
  readonly template: string;
  readonly label: Label;
  readonly mutating: boolean;
  /** 1 for the template's first occurrence in the stream. */
  readonly occurrence: number;
  /** The governor's decision on the occurrence's first failure. */
  readonly decision: string;
  /** That decision came from a learned override. */
  readonly learned: boolean;
  readonly calls: number;
  /** Failed calls after the first failure (the first one is unavoidable). */
  readonly wasted: number;
  /** Attempts the runtime repeated (retries) in this occurrence. */
  readonly retries: number;
  readonly recovered: boolean;
}

/** Figures of one pass over the stream. */
export interface SimulationReport {
  readonly learning: boolean;
  readonly runs: number;
  /** Decision accuracy at the n-th occurrence of a template (n as a key), over every template. */
  readonly accuracyAt: Record<string, number>;
  readonly wastedCalls: number;
  readonly calls: number;
  readonly retries: number;
  readonly recovered: number;
  readonly learnedOverrides: number;
  /** Retries of templates a person must fix (label stop). */
  readonly personOnlyRetries: number;
  /** Retries of templates of mutating tools. */
  readonly mutationRetries: number;
  readonly results: readonly OccurrenceResult[];
}

const WRITES =
  /(^|_)(create|update|delete|write|send|post|insert|set|add|remove|put|edit|move|upload|merge|push|publish|run|execute|deploy|cancel|charge|pay|transfer)/i;

/**
 * The non-ambiguous texts of the corpus files (all with `ambiguous`) as templates, one per server, tool and template
 * string (its first text). Whether a tool writes is read from its name; a template labelled
 * `switch_tool` has an alternative, and so has a seeded third of the others.
 */
export function loadTemplates(
  files: readonly string[],
  seed: number,
  options: { readonly ambiguous?: boolean } = {},
): Template[] {
  const random = seededRandom(seed ^ 0x5eed);
  const seen = new Set<string>();
  const out: Template[] = [];
  for (const file of files) {
    for (const line of readFileSync(file, "utf8").split("\n")) {
      if (line.trim() === "") continue;
      const row = JSON.parse(line) as {
        id: string;
        server: string;
        tool: string;
        template: string;
        text: string;
        label: string;
        ambiguous?: boolean;
      };
      if ((row.ambiguous === true && options.ambiguous !== true) || !isLabel(row.label)) continue;
      const key = `${row.server}\u0000${row.tool}\u0000${row.template}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({
        id: row.id,
        server: row.server,
        tool: row.tool,
        text: row.text,
        label: row.label,
        mutating: WRITES.test(row.tool),
        hasAlternative: row.label === "switch_tool" || random() < 1 / 3,
        recoverAfter: 1 + Math.floor(random() * 2),
      });
    }
  }
  return out;
}

function isLabel(label: string): label is Label {
  return ["correct_arguments", "retry_dependency", "switch_tool", "stop"].includes(label);
}

/** The policy of the simulation: effects, alternatives, fast virtual backoff, no breaker. */
export function simulationPolicy(templates: readonly Template[], learning: boolean): PolicyInput {
  const servers: Record<string, { tools: Record<string, Record<string, unknown>> }> = {};
  for (const t of templates) {
    const server = servers[t.server] ?? { tools: {} };
    servers[t.server] = server;
    const tool = server.tools[t.tool] ?? { effect: t.mutating ? "mutating" : "read_only" };
    server.tools[t.tool] = tool;
    if (t.hasAlternative) tool.alternatives = [`${t.tool}_alt`];
  }
  return {
    learning: { enabled: learning },
    // The breaker (consecutive failures per tool) would mix another mechanism into the figures.
    defaults: { breaker: { threshold: 1_000_000 } },
    retryBudget: { ratio: 1, reserve: 1_000 },
    servers,
  } as PolicyInput;
}

/**
 * Runs the stream once. Timers of up to a minute (backoffs, server hints) fire at once and move
 * the virtual clock instead; longer ones (the run's deadline) keep real time and never fire.
 */
export async function simulateLearning(options: SimulationOptions): Promise<SimulationReport> {
  const occurrences = options.occurrences ?? 20;
  const gapMs = options.gapMs ?? 5_000;
  const maxTurns = options.maxTurns ?? 4;
  const random = seededRandom(options.seed);
  const stream: Template[] = [];
  for (const t of options.templates) for (let i = 0; i < occurrences; i++) stream.push(t);
  // Fisher-Yates with the seeded generator: templates recur interleaved, in a fixed order.
  for (let i = stream.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [stream[i], stream[j]] = [stream[j] as Template, stream[i] as Template];
  }

  const clock = { now: 1_700_000_000_000 };
  const events: GovernorEvent[] = [];
  const governor = createGovernor(simulationPolicy(options.templates, options.learning), {
    store: createMemoryStore(),
    now: () => clock.now,
    random: seededRandom(options.seed ^ 0xbac0),
    metrics: false,
    onEvent: (event) => events.push(event),
  });
  const restore = virtualTimers(clock);
  const seen = new Map<string, number>();
  const results: OccurrenceResult[] = [];
  try {
    for (const t of stream) {
      clock.now += gapMs;
      const occurrence = (seen.get(t.id) ?? 0) + 1;
      seen.set(t.id, occurrence);
      events.length = 0;
      results.push(await occur(governor, t, occurrence, maxTurns, events));
    }
  } finally {
    restore();
  }
  return summarize(options.learning, results);
}

type SimGovernor = ReturnType<typeof createGovernor>;

async function occur(
  governor: SimGovernor,
  t: Template,
  occurrence: number,
  maxTurns: number,
  events: GovernorEvent[],
): Promise<OccurrenceResult> {
  const run = governor.startRun();
  let tool = t.tool;
  let version = 0;
  let calls = 0;
  let failures = 0;
  let transientLeft = t.recoverAfter;
  let recovered = false;
  const fail = () => ({
    content: [{ type: "text" as const, text: t.text }],
    isError: true as const,
  });
  for (let turn = 0; turn < maxTurns && !run.ended; turn++) {
    const args = { value: `v${version}` };
    const onAlternative = tool !== t.tool;
    const outcome = await run.call({ tool, server: t.server, args }, async () => {
      calls++;
      if (works(t, onAlternative, version, () => transientLeft-- <= 0)) {
        return { content: [{ type: "text" as const, text: "done" }] };
      }
      failures++;
      return fail();
    });
    if (outcome.kind === "ok") {
      recovered = true;
      break;
    }
    if (outcome.kind === "stop") break;
    if (outcome.action === "correct_arguments") version++;
    else if (t.hasAlternative && !onAlternative) tool = `${t.tool}_alt`;
    else break;
  }
  run.end();
  const decisions = events.filter((e): e is DecisionEvent => e.type === "decision");
  const first = decisions.find((d) => d.call === 1 && d.attempt === 1);
  return {
    template: t.id,
    label: t.label,
    mutating: t.mutating,
    occurrence,
    decision: first?.action ?? "none",
    learned: first?.learned !== undefined,
    calls,
    wasted: Math.max(0, failures - 1),
    retries: decisions.filter((d) => d.action === "retry_dependency").length,
    recovered,
  };
}

/** Whether a call of the template succeeds, as its true label says. */
function works(
  t: Template,
  onAlternative: boolean,
  version: number,
  transientSpent: () => boolean,
): boolean {
  switch (t.label) {
    case "retry_dependency":
      // The dependency recovers after a few failed attempts, whoever makes them.
      return !onAlternative && transientSpent();
    case "correct_arguments":
      return !onAlternative && version > 0;
    case "switch_tool":
      return onAlternative;
    case "stop":
      return false;
  }
}

function summarize(learning: boolean, results: readonly OccurrenceResult[]): SimulationReport {
  const accuracyAt: Record<string, number> = {};
  for (const n of [1, 5, 20]) {
    const at = results.filter((r) => r.occurrence === n);
    if (at.length === 0) continue;
    accuracyAt[String(n)] = at.filter((r) => r.decision === r.label).length / at.length;
  }
  const sum = (f: (r: OccurrenceResult) => number) => results.reduce((s, r) => s + f(r), 0);
  return {
    learning,
    runs: results.length,
    accuracyAt,
    wastedCalls: sum((r) => r.wasted),
    calls: sum((r) => r.calls),
    retries: sum((r) => r.retries),
    recovered: sum((r) => (r.recovered ? 1 : 0)),
    learnedOverrides: sum((r) => (r.learned ? 1 : 0)),
    personOnlyRetries: sum((r) => (r.label === "stop" ? r.retries : 0)),
    mutationRetries: sum((r) => (r.mutating ? r.retries : 0)),
    results,
  };
}

/**
 * Makes timers of up to a minute fire at the next turn of the event loop (`setImmediate`) and
 * move the virtual clock by their delay. Answers the function that restores the real timers.
 */
function virtualTimers(clock: { now: number }): () => void {
  const realSet = globalThis.setTimeout;
  const realClear = globalThis.clearTimeout;
  const patched = ((fn: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const delay = typeof ms === "number" && ms > 0 ? ms : 0;
    if (delay > 60_000) {
      const timer = realSet(fn, delay, ...args);
      timer.unref?.();
      return timer;
    }
    const immediate = setImmediate(() => {
      immediates.delete(immediate);
      clock.now += delay;
      fn(...args);
    });
    immediates.add(immediate);
    return immediate;
  }) as unknown as typeof setTimeout;
  const immediates = new Set<unknown>();
  globalThis.setTimeout = patched;
  globalThis.clearTimeout = ((timer: Parameters<typeof clearTimeout>[0]) => {
    if (immediates.delete(timer)) clearImmediate(timer as unknown as NodeJS.Immediate);
    else realClear(timer);
  }) as typeof clearTimeout;
  return () => {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
  };
}
