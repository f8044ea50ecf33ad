import { z } from "zod";
import type { BudgetName } from "../judge/decide.ts";
import type { LocalKind } from "../judge/failure.ts";
import { OUTCOME_FIELDS } from "../judge/learned.ts";
import { CERTAINTIES } from "../reasons.ts";
import { ACTIONS, REASONS, type Reason } from "../types.ts";
import type { CallOutcomeKind, GovernorEvent, RunEndReason } from "./events.ts";

// The runtime twin of events.ts: what `parseEvents` and `governor report` accept. The type
// checks at the bottom keep the two in step.

const reasonNames = Object.keys(REASONS) as [Reason, ...Reason[]];
const budgetNames = [
  "calls",
  "failures",
  "retries",
  "corrections",
  "switches",
  "wallTime",
] as const satisfies readonly BudgetName[];
const outcomes = [
  "ok",
  "replayed",
  "model",
  "stop",
  "host",
] as const satisfies readonly CallOutcomeKind[];

const reason = z.enum(reasonNames);
const count = z.int().nonnegative();
const ms = z.number().nonnegative();
/** The latest time a `Date` holds: a later `at` is no time at all (`new Date(at)` is invalid). */
const MAX_TIME = 8.64e15;
const time = ms.max(MAX_TIME, {
  error: (issue) =>
    `not a time: ${String(issue.input)} is past the latest epoch ms a date holds (${MAX_TIME})`,
});

// Unknown fields are accepted and dropped: adding an optional field is a compatible change that
// keeps `v: 1`, so a reader of v1 must read the lines of a newer writer of v1.
const base = {
  v: z.literal(1),
  at: time,
  runId: z.string(),
  truncated: z.literal(true).exactOptional(),
};

const localKinds = [
  "timeout",
  "aborted",
  "connection_closed",
  "connection_refused",
  "not_connected",
  "network",
  "http_status",
  "malformed_result",
  "spawn_failed",
  "thrown",
] as const satisfies readonly LocalKind[];
const hash16 = z.string().regex(/^[0-9a-f]{16}$/, "must be 16 lowercase hex digits");
const callNumber = z.int().positive().exactOptional();

const recordedFailure = z.object({
  channel: z.enum(["tool", "protocol", "local"]),
  origin: z.enum(["local", "peer"]),
  text: z.string(),
  redacted: z.literal(true).exactOptional(),
  code: z.union([z.number(), z.string()]).exactOptional(),
  httpStatus: z.int().min(100).max(599).exactOptional(),
  retryAfterMs: ms.exactOptional(),
  local: z.enum(localKinds).exactOptional(),
  toolFailure: z
    .object({
      class: z.string().exactOptional(),
      code: z.string().exactOptional(),
      retryable: z.boolean().exactOptional(),
    })
    .exactOptional(),
});

const decisionInput = z.object({
  callHash: hash16,
  failure: recordedFailure,
  annotations: z
    .object({
      readOnlyHint: z.boolean().exactOptional(),
      destructiveHint: z.boolean().exactOptional(),
      idempotentHint: z.boolean().exactOptional(),
    })
    .exactOptional(),
  elapsedMs: ms,
  hostDeadlineMs: z.number().exactOptional(),
  verified: z.enum(["absent", "present", "unknown"]).exactOptional(),
  retryBudgetEmpty: z.literal(true).exactOptional(),
  evidence: z
    .object({
      argument: z
        .object({ name: z.string(), by: z.enum(["value", "property", "schema"]) })
        .exactOptional(),
      targets: z.enum(["none", "own", "foreign"]),
      schema: z.literal(true).exactOptional(),
    })
    .exactOptional(),
  learned: z
    .object(
      Object.fromEntries(OUTCOME_FIELDS.map((f) => [f, z.number().nonnegative()])) as {
        [F in (typeof OUTCOME_FIELDS)[number]]: z.ZodNumber;
      },
    )
    .exactOptional(),
});

const learnedOverride = z.object({
  from: z.enum(["retry_dependency", "correct_arguments", "switch_tool"]),
  to: z.enum(["switch_tool", "stop"]),
  paid: z.number().nonnegative(),
  futile: z.number().nonnegative(),
});

const decisionEvent = z.object({
  ...base,
  type: z.literal("decision"),
  tool: z.string(),
  server: z.string().exactOptional(),
  call: callNumber,
  // 0: refused before any attempt (denied by policy, a budget, an open breaker).
  attempt: count,
  action: z.enum(ACTIONS),
  reason,
  cause: reason.exactOptional(),
  certainty: z.enum(CERTAINTIES),
  fingerprint: hash16,
  delayMs: ms.exactOptional(),
  idempotencyKey: z.string().min(1).exactOptional(),
  observed: z.boolean(),
  learned: learnedOverride.exactOptional(),
  input: decisionInput.exactOptional(),
});

const callEvent = z.object({
  ...base,
  type: z.literal("call"),
  tool: z.string(),
  server: z.string().exactOptional(),
  call: callNumber,
  callHash: hash16.exactOptional(),
  outcome: z.enum(outcomes),
  attempts: count,
  durationMs: ms,
});

const runSummary = z.object({
  runId: z.string(),
  reason: z.enum([...reasonNames, "completed"] as [RunEndReason, ...RunEndReason[]]),
  budget: z.enum(budgetNames).exactOptional(),
  personResolvable: z.boolean(),
  calls: count,
  attempts: count,
  actions: z.record(z.enum(ACTIONS), count),
  retries: count,
  failures: count,
  fingerprints: z.record(z.string(), count),
  durationMs: ms,
  lastFailure: z.object({ tool: z.string(), reason, text: z.string() }).exactOptional(),
  observeOnly: z.boolean(),
});

const runEndEvent = z.object({
  ...base,
  type: z.literal("run_end"),
  summary: runSummary,
});

/**
 * The zod schema of one event line, version 1: {@link GovernorEvent} at runtime. Unknown fields
 * are accepted and dropped (adding an optional field does not bump `v`); a line of another
 * version fails on `v`. Used by {@link parseEvents} and `governor report`.
 *
 * @example
 * const result = eventSchema.safeParse(JSON.parse(line));
 */
export const eventSchema = z.discriminatedUnion("type", [decisionEvent, callEvent, runEndEvent]);

// Both directions: every event the run emits passes the schema, and what the schema yields is
// an event. A field added to one side and not the other fails the type check here.
type SchemaOutput = z.output<typeof eventSchema>;
const emittedEventsParse = (event: GovernorEvent): z.input<typeof eventSchema> => event;
const parsedLinesAreEvents = (event: SchemaOutput): GovernorEvent => event;
void emittedEventsParse;
void parsedLinesAreEvents;
