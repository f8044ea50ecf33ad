// The shapes of the demo's report, apart from the code that fills them (demo.ts) and prints
// them (demo-format.ts).

/** The three runtimes the demo compares, in report order. */
export const STRATEGIES = ["naive", "blindRetry", "governed"] as const;
export type Strategy = (typeof STRATEGIES)[number];

/** Counts for one strategy (over all tasks) or one task of one strategy. See docs/demo.md. */
export interface DemoCounts {
  /** `tools/call` requests sent to the server, retries included. */
  readonly toolCalls: number;
  /** Of those, the ones whose result was not usable (isError, JSON-RPC error, no answer). */
  readonly wastedCalls: number;
  /** Committed writes that repeat an earlier one (from the server's effects file). */
  readonly duplicateWrites: number;
  /** Model-visible texts holding a fixture secret (keys, tokens, paths) or a stack frame. */
  readonly secretsToModel: number;
  /** Tasks that ended with a usable result. */
  readonly tasksSucceeded: number;
  /** Model calls (turns of the agent loop). */
  readonly modelCalls: number;
  /** Attempts beyond the first of a model call, made by the runtime. */
  readonly retries: number;
  /** Unfinished tasks by why they ended: a Governor stop reason, or `turn_limit`. */
  readonly stopReasons: Readonly<Record<string, number>>;
}

/** One turn as reported: the call, whether it failed, the start of what the model read. */
export interface DemoTurn {
  readonly tool: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly isError: boolean;
  /** The first line of the model-visible text, fixture secrets masked, cut to 120 characters. */
  readonly text: string;
  /** The model-visible text leaked a secret or a stack frame. */
  readonly leak: boolean;
  /** The rule by which the model chose its next call (see testkit `react`). */
  readonly reaction?: string;
}

/** What one strategy did in one task. */
export interface DemoTaskResult extends Omit<DemoCounts, "tasksSucceeded" | "stopReasons"> {
  /** `succeeded`, `turn_limit`, or the Governor stop reason. */
  readonly outcome: string;
  readonly succeeded: boolean;
  readonly turns: readonly DemoTurn[];
}

/** Governor's own metrics, summed over the governed strategy's run summaries. */
export interface GovernorMetrics {
  readonly runs: number;
  readonly calls: number;
  readonly attempts: number;
  readonly failures: number;
  readonly retries: number;
  readonly corrections: number;
  readonly switches: number;
  readonly hostErrors: number;
  /** Runs by how they ended (`completed` or a stop reason). */
  readonly runEnds: Readonly<Record<string, number>>;
  /** Runs stopped, by reason. */
  readonly stops: Readonly<Record<string, number>>;
}

/** The output of `governor demo --json`. `totals.<strategy>` is a contract (docs/architecture.md §9). */
export interface DemoReport {
  readonly v: 1;
  readonly maxTurns: number;
  /** Present when the governed runtime ran in observe-only mode (`--observe`). */
  readonly observeOnly?: true;
  readonly tasks: ReadonlyArray<
    { readonly id: string; readonly title: string } & Record<Strategy, DemoTaskResult>
  >;
  readonly totals: Record<Strategy, DemoCounts>;
  readonly metrics: GovernorMetrics;
  readonly durationMs: number;
}
