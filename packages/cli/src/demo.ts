import { createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createJsonlSink, type GovernorEvent, type RunSummary } from "@governor/core";
import {
  type AgentRuntime,
  type AgentTask,
  blindRetryRuntime,
  connectFaultServer,
  countDuplicateWrites,
  DEFAULT_MAX_TURNS,
  DEMO_SCENARIO,
  DEMO_TASKS,
  fixtureSecrets,
  leaksSecrets,
  naiveRuntime,
  readEffects,
  runTask,
  type TaskRecord,
} from "@governor/testkit";
import { formatDemo } from "./demo-format.ts";
import {
  type DemoCounts,
  type DemoReport,
  type DemoTaskResult,
  type DemoTurn,
  type GovernorMetrics,
  STRATEGIES,
  type Strategy,
} from "./demo-types.ts";
import { parseOptions } from "./options.ts";

export type { DemoCounts, DemoReport, DemoTaskResult, DemoTurn, GovernorMetrics, Strategy };
export { STRATEGIES };

import { DEMO_POLICY, governedRuntime } from "./demo-governed.ts";
import type { CliIo } from "./io.ts";

/** Options of {@link runDemo}. */
export interface DemoOptions {
  /**
   * The SDK request timeout of one attempt. No demo task waits on a timeout: it only bounds a
   * hang. @default 3000
   */
  readonly timeoutMs?: number;
  /** @default DEMO_TASKS */
  readonly tasks?: readonly AgentTask[];
  /** @default 8 */
  readonly maxTurns?: number;
  /**
   * Runs the governed runtime in observe-only mode: decisions are computed and logged, not
   * enforced; failures reach the model raw. @default false
   */
  readonly observeOnly?: boolean;
  /** Receives every event of the governed runtime's governor (for an event log). */
  readonly onEvent?: (event: GovernorEvent) => void;
}

function mask(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) out = out.split(s).join("<secret>");
  const line = out.split("\n")[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function outcomeName(record: TaskRecord): string {
  const { outcome } = record;
  return outcome.kind === "stopped" ? outcome.reason : outcome.kind;
}

type ResolvedOptions = Required<Omit<DemoOptions, "onEvent">> & Pick<DemoOptions, "onEvent">;

interface StrategyRun {
  readonly tasks: DemoTaskResult[];
  readonly summaries: RunSummary[];
}

/** Runs every task with one strategy against its own fault server and effects file. */
async function runStrategy(
  strategy: Strategy,
  dir: string,
  options: ResolvedOptions,
): Promise<StrategyRun> {
  const effectsFile = join(dir, `${strategy}.effects.jsonl`);
  const secrets = fixtureSecrets();
  const connection = await connectFaultServer({ effectsFile, scenario: DEMO_SCENARIO });
  const summaries: RunSummary[] = [];
  let attemptsOfCalls = 0;
  let modelCalls = 0;
  const onCall = (attempts: number) => {
    modelCalls += 1;
    attemptsOfCalls += attempts;
  };
  const { timeoutMs } = options;
  const runtime: AgentRuntime =
    strategy === "naive"
      ? naiveRuntime(connection, { timeoutMs, onCall })
      : strategy === "blindRetry"
        ? blindRetryRuntime(connection, { timeoutMs, onCall, attempts: 3 })
        : governedRuntime(connection, {
            timeoutMs,
            onSummary: (s) => summaries.push(s),
            policy: options.observeOnly ? { ...DEMO_POLICY, observeOnly: true } : DEMO_POLICY,
            ...(options.onEvent !== undefined && { onEvent: options.onEvent }),
          });
  try {
    const { tools } = await connection.client.listTools();
    const toolNames = tools.map((t) => t.name);
    const results: DemoTaskResult[] = [];
    for (const task of options.tasks) {
      const before = connection.counts();
      const dupBefore = countDuplicateWrites(readEffects(effectsFile));
      const retriesBefore = attemptsOfCalls - modelCalls;
      const summariesBefore = summaries.length;
      const record = await runTask(task, runtime, { tools: toolNames, maxTurns: options.maxTurns });
      const after = connection.counts();
      const retries =
        strategy === "governed"
          ? summaries.slice(summariesBefore).reduce((n, s) => n + s.retries, 0)
          : attemptsOfCalls - modelCalls - retriesBefore;
      const turns = record.turns.map(
        (t): DemoTurn => ({
          tool: t.request.name,
          args: t.request.arguments,
          isError: t.observation.isError,
          text: mask(t.observation.text, secrets),
          leak: leaksSecrets(t.observation.text, secrets),
          ...(t.reaction !== undefined && { reaction: t.reaction }),
        }),
      );
      results.push({
        outcome: outcomeName(record),
        succeeded: record.outcome.kind === "succeeded",
        toolCalls: after.toolCalls - before.toolCalls,
        wastedCalls: after.failedCalls - before.failedCalls,
        duplicateWrites: countDuplicateWrites(readEffects(effectsFile)) - dupBefore,
        secretsToModel: turns.filter((t) => t.leak).length,
        modelCalls: record.turns.length,
        retries,
        turns,
      });
    }
    return { tasks: results, summaries };
  } finally {
    await connection.close();
  }
}

function totalsOf(results: readonly DemoTaskResult[]): DemoCounts {
  const sum = (
    key:
      | "toolCalls"
      | "wastedCalls"
      | "duplicateWrites"
      | "secretsToModel"
      | "modelCalls"
      | "retries",
  ) => results.reduce((n, r) => n + r[key], 0);
  const stopReasons: Record<string, number> = {};
  for (const r of results) {
    if (!r.succeeded) stopReasons[r.outcome] = (stopReasons[r.outcome] ?? 0) + 1;
  }
  return {
    toolCalls: sum("toolCalls"),
    wastedCalls: sum("wastedCalls"),
    duplicateWrites: sum("duplicateWrites"),
    secretsToModel: sum("secretsToModel"),
    tasksSucceeded: results.filter((r) => r.succeeded).length,
    modelCalls: sum("modelCalls"),
    retries: sum("retries"),
    stopReasons,
  };
}

function metricsOf(summaries: readonly RunSummary[]): GovernorMetrics {
  const runEnds: Record<string, number> = {};
  const stops: Record<string, number> = {};
  let calls = 0;
  let attempts = 0;
  let failures = 0;
  let retries = 0;
  let corrections = 0;
  let switches = 0;
  let hostErrors = 0;
  for (const s of summaries) {
    runEnds[s.reason] = (runEnds[s.reason] ?? 0) + 1;
    if (s.reason !== "completed") stops[s.reason] = (stops[s.reason] ?? 0) + 1;
    calls += s.calls;
    attempts += s.attempts;
    failures += s.failures;
    retries += s.retries;
    corrections += s.actions.correct_arguments;
    switches += s.actions.switch_tool;
    hostErrors += s.actions.host;
  }
  return {
    runs: summaries.length,
    calls,
    attempts,
    failures,
    retries,
    corrections,
    switches,
    hostErrors,
    runEnds,
    stops,
  };
}

/**
 * Runs the demo: the same scripted agent and tasks with three runtimes (naive, blind retry,
 * Governor), each against its own fault server (a child process over stdio) and effects file in a
 * temporary directory that is removed afterwards.
 */
export async function runDemo(options: DemoOptions = {}): Promise<DemoReport> {
  const started = Date.now();
  const resolved: ResolvedOptions = {
    timeoutMs: options.timeoutMs ?? 3000,
    tasks: options.tasks ?? DEMO_TASKS,
    maxTurns: options.maxTurns ?? DEFAULT_MAX_TURNS,
    observeOnly: options.observeOnly ?? false,
    ...(options.onEvent !== undefined && { onEvent: options.onEvent }),
  };
  const dir = await mkdtemp(join(tmpdir(), "governor-demo-"));
  try {
    // Each strategy has its own server and effects file, so they can run side by side.
    // allSettled: when one fails, the others still close their servers before the directory goes.
    const settled = await Promise.allSettled(STRATEGIES.map((s) => runStrategy(s, dir, resolved)));
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    const [naive, blindRetry, governed] = settled.map(
      (r) => (r as PromiseFulfilledResult<StrategyRun>).value,
    );
    const runs = { naive, blindRetry, governed } as Record<Strategy, StrategyRun>;
    const tasks = resolved.tasks.map((task, i) => ({
      id: task.id,
      title: task.title,
      naive: runs.naive.tasks[i] as DemoTaskResult,
      blindRetry: runs.blindRetry.tasks[i] as DemoTaskResult,
      governed: runs.governed.tasks[i] as DemoTaskResult,
    }));
    return {
      v: 1,
      maxTurns: resolved.maxTurns,
      ...(resolved.observeOnly && { observeOnly: true as const }),
      tasks,
      totals: {
        naive: totalsOf(runs.naive.tasks),
        blindRetry: totalsOf(runs.blindRetry.tasks),
        governed: totalsOf(runs.governed.tasks),
      },
      metrics: metricsOf(runs.governed.summaries),
      durationMs: Date.now() - started,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * `governor demo [--json] [--observe] [--events FILE]`: runs the demo; prints the table, or one
 * JSON object with `--json`. `--observe` runs the governed runtime in observe-only mode;
 * `--events FILE` writes its event log (JSON Lines, the file is replaced) for `governor report`
 * and `governor replay`.
 */
export async function demoCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseOptions({
    args,
    options: {
      json: { type: "boolean" },
      observe: { type: "boolean", default: false },
      events: { type: "string" },
    },
    strict: true,
  });
  const file = values.events === undefined ? undefined : createWriteStream(values.events);
  const sink = file === undefined ? undefined : createJsonlSink(file);
  let report: DemoReport;
  try {
    report = await runDemo({
      observeOnly: values.observe,
      ...(sink !== undefined && { onEvent: sink.write }),
    });
  } finally {
    await sink?.close();
    if (file !== undefined) await new Promise((resolve) => file.end(resolve));
  }
  if (sink?.lastError !== undefined) {
    const { lastError } = sink;
    throw new Error(
      `could not write ${values.events}: ${lastError instanceof Error ? lastError.message : String(lastError)}`,
    );
  }
  io.stdout.write(values.json ? `${JSON.stringify(report)}\n` : formatDemo(report));
  return 0;
}
