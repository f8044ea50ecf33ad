/**
 * The closed set of reasons, one record per reason: the action it normally comes with, the
 * certainty a failure with it shows, whether a person can resolve it, whether the tool's breaker
 * and learning count it, the model's advice and its line in docs/stop-reasons.md. Everything else reads them
 * from here (the `Reason` type, `REASONS`, `PERSON_RESOLVABLE`, the model's texts, the policy's
 * JSON Schema), and `pnpm gen` writes the docs' table from them: adding a reason is one record
 * (docs/architecture.md §4). A leaf module: it imports nothing, so every layer may read it.
 */

/** Who can fix it: the model (correct, switch), the runtime (retry), nobody (stop), the host (host). */
export type Action = "correct_arguments" | "retry_dependency" | "switch_tool" | "stop" | "host";

/** Every action, in a fixed order (for metrics and docs). */
export const ACTIONS = [
  "correct_arguments",
  "retry_dependency",
  "switch_tool",
  "stop",
  "host",
] as const satisfies readonly Action[];

/**
 * What is known of the call's effect.
 * - `not_sent`: provably never reached the server.
 * - `failed`: the server answered with a failure that happens before any effect.
 * - `unknown`: the effect may have happened.
 */
export type Certainty = "not_sent" | "failed" | "unknown";

/** Every certainty, from the most to the least known (for schemas). */
export const CERTAINTIES = [
  "not_sent",
  "failed",
  "unknown",
] as const satisfies readonly Certainty[];

/** What the advice of a stop may depend on: the run's counts and the decision's own fields. */
export interface AdviceContext {
  /** How often this failure has reached the model in this run, this one included. */
  readonly repeats?: number | undefined;
  /** The repeat limit that stops the run. */
  readonly maxRepeats?: number | undefined;
  /** Attempts made for this call. */
  readonly attempts?: number | undefined;
  /** The budget that ran out (a `BudgetName`). */
  readonly budget?: string | undefined;
  /** The decision's certainty. */
  readonly certainty: Certainty;
}

/** One reason, as written in {@link DEFINITIONS}: what is left out takes the default. */
interface ReasonDefinition {
  /** The action a failure with this reason normally comes with. */
  readonly action: Action;
  /** The reason's meaning: its line in docs/stop-reasons.md. */
  readonly doc: string;
  /**
   * What a failure with this reason shows of the call's effect when nothing more specific is known
   * (a classification by the tool's own failure class). @default "failed"
   */
  readonly certainty?: Certainty;
  /** A person could resolve it (log in again, approve, raise a quota), so a host can ask. @default false */
  readonly personResolvable?: boolean;
  /** The docs' "a person can resolve it" cell when it is neither yes nor blank. */
  readonly personDoc?: string;
  /**
   * `always`: a failure with this reason counts toward its tool's breaker whatever its action.
   * `retried`: it counts when its decision retries the dependency, as any retried failure does.
   * @default "retried"
   */
  readonly breaker?: "always" | "retried";
  /**
   * The model's advice when a decision carries this reason with its usual action (a host reason's
   * advice is read when it stops the run, the only way the model hears of it). A stop without
   * advice of its own gives its cause's.
   */
  readonly advice?: string;
  /**
   * Advice that depends on the stop, given when this is the decision's own reason (never as a
   * cause); `undefined` falls back to {@link advice}.
   */
  readonly adviceFor?: (c: AdviceContext) => string | undefined;
  /**
   * The advice speaks of the write that stopped the run ("do not repeat it"): a call not made after
   * such a stop is told so in its own words, not given this advice. @default false
   */
  readonly aboutWrite?: boolean;
  /**
   * A call that ends with this reason tells nothing of the retries, corrections and switches before
   * it (it was cut short, or the failure is not the tool's): learning records no outcome for them
   * (docs/learning.md). @default false
   */
  readonly noEvidence?: boolean;
}

// The table. Its order is the docs' and the JSON Schema's: by usual action, then by likelihood.
const DEFINITIONS = {
  // correct_arguments: the model can fix the call
  invalid_argument: {
    action: "correct_arguments",
    doc: "an argument is malformed, missing or out of range",
  },
  not_found: {
    action: "correct_arguments",
    doc: "the id, name or path does not exist",
    advice: "Use an identifier that exists; look it up first if unsure.",
  },
  conflict: {
    action: "correct_arguments",
    doc: "the target changed or already exists, or an identical call is in flight",
    advice:
      "The target changed or already exists; read its current state, then adjust the arguments.",
  },
  unclassified: {
    action: "correct_arguments",
    doc: "nothing matched: the model sees the redacted text; repeats stop the run",
  },
  // retry_dependency: transient, the runtime retries
  rate_limited: {
    action: "retry_dependency",
    doc: "429 / rate limit; Retry-After is honored, clamped",
  },
  unavailable: { action: "retry_dependency", doc: "503, overloaded, temporarily unavailable" },
  timeout: {
    action: "retry_dependency",
    doc: "the call or its upstream timed out",
    certainty: "unknown",
  },
  upstream_error: {
    action: "retry_dependency",
    doc: "500/502/504 and other gateway errors",
    certainty: "unknown",
  },
  network_error: {
    action: "retry_dependency",
    doc: "`fetch failed`, DNS trouble, socket errors",
    certainty: "unknown",
  },
  connection_closed: {
    action: "retry_dependency",
    doc: "the connection dropped mid-call",
    certainty: "unknown",
  },
  connection_refused: {
    action: "retry_dependency",
    doc: "nothing was sent",
    certainty: "not_sent",
  },
  // switch_tool: another tool can serve the request
  unknown_tool: {
    action: "switch_tool",
    doc: "the tool does not exist (both channels)",
    advice: "This tool does not exist.",
  },
  not_supported: { action: "switch_tool", doc: "this tool cannot do this kind of operation" },
  circuit_open: {
    action: "switch_tool",
    doc: "the tool's breaker is open for a cool-down",
    advice: "This tool is temporarily unavailable.",
  },
  denied_by_policy: {
    action: "switch_tool",
    doc: "the policy denies this tool",
    advice: "This tool may not be used in this run.",
  },
  // stop: nobody in the loop can fix it
  unauthorized: {
    action: "stop",
    doc: "credentials missing, invalid or expired",
    personResolvable: true,
    advice: "Authentication failed; a person must renew the credentials.",
  },
  forbidden: {
    action: "stop",
    doc: "permission denied",
    personResolvable: true,
    advice: "A person must grant access; do not retry.",
  },
  quota_exceeded: {
    action: "stop",
    doc: "quota or billing limit for the period",
    personResolvable: true,
    advice: "The quota is spent; a person must raise it or wait for it to reset.",
  },
  business_rule: {
    action: "stop",
    doc: "the service refuses by one of its rules",
    advice: "The service refuses this request by one of its rules; do not repeat it.",
  },
  misconfigured: {
    action: "stop",
    doc: "the server is misconfigured",
    personResolvable: true,
    advice: "The service is misconfigured; a person must fix it.",
  },
  partial_success: {
    action: "stop",
    doc: "the tool says the write happened but a later step failed; not repeated",
    personResolvable: true,
    advice:
      "The write happened, but a later step failed. Do not repeat the call: it would write again. A person must finish or check the step that failed.",
    aboutWrite: true,
  },
  aborted: {
    action: "stop",
    doc: "the run's signal was aborted",
    advice: "The run was cancelled.",
    noEvidence: true,
  },
  deadline_exceeded: {
    action: "stop",
    doc: "no time left before the run's deadline",
    advice: "No time is left before the run's deadline.",
  },
  uncertain_mutation: {
    action: "stop",
    doc: "a write may have happened; it is not repeated blindly",
    personResolvable: true,
    advice:
      "No answer confirmed the outcome, so the write may have happened. Do not repeat it; a person must check.",
    aboutWrite: true,
  },
  repeated_failure: {
    action: "stop",
    doc: "the same fingerprint `maxRepeats` times (default 3)",
    adviceFor: (c) => `The same failure happened ${c.repeats ?? c.maxRepeats ?? "several"} times.`,
  },
  loop_detected: {
    action: "stop",
    doc: "the same call with the same result repeated",
    advice: "The same call was repeated without progress.",
  },
  budget_exhausted: {
    action: "stop",
    doc: "a run budget is spent (`budget` says which)",
    adviceFor: (c) => `The run's ${c.budget ?? "call"} budget is spent.`,
  },
  retries_exhausted: {
    action: "stop",
    doc: "retries ran out (attempt cap, server retry budget, or a hint past the cap) and the policy names no other tool",
    adviceFor: (c) =>
      c.attempts === 1
        ? "The service is failing and cannot be retried now."
        : `The service still fails after ${c.attempts ?? "several"} attempts.`,
  },
  learned_futile: {
    action: "stop",
    doc: "its retry, correction or switch never paid off before ([learning](learning.md))",
    personDoc: "as the cause",
  },
  not_approved: {
    action: "stop",
    doc: "a `confirm` tool was not approved",
    personResolvable: true,
    advice: "A person did not approve this call.",
  },
  person_required: {
    action: "stop",
    doc: "the text says a person must act (ask the user, a team, an admin), the learned text model read it so, or it could not tell on a write ([decisions](decisions.md))",
    personResolvable: true,
    advice:
      "A person must look at this before anything else is tried; do not repeat the call or change its arguments to get around it.",
  },
  // host: protocol-level, never shown to the model
  protocol_error: {
    action: "host",
    doc: "a JSON-RPC error from the server",
    advice: "The host has been told; nothing in this conversation can fix it.",
    noEvidence: true,
  },
  session_expired: {
    action: "host",
    doc: 'the session is gone (HTTP 404, "Session not found", not connected)',
    personResolvable: true,
    advice: "The session with the tool ended; the host has been told.",
    noEvidence: true,
  },
  malformed_response: {
    action: "host",
    doc: "a reply failed the result schema; a tool threw `null`, a number (not an error)",
    advice: "The tool's reply was malformed; the host has been told.",
  },
  elicitation_required: {
    action: "host",
    doc: "the server asks the user something (`-32042`)",
    personResolvable: true,
    advice: "The tool needs input from the user; the host has been told.",
  },
  transport_error: {
    action: "host",
    doc: "the client side failed (spawn failure, HTTP transport error)",
    // The tool could not be reached: that is its dependency failing, whoever handles it.
    breaker: "always",
    advice: "The tool could not be reached; the host has been told.",
  },
  store_unavailable: {
    action: "host",
    doc: "Governor's store failed or did not answer in time; nothing more was executed",
    advice:
      "Governor's own storage is unavailable, so the call was not made; the host has been told.",
    noEvidence: true,
    // Only a call refused before it was sent was not made.
    adviceFor: (c) =>
      c.certainty === "not_sent"
        ? undefined
        : c.certainty === "unknown"
          ? "Governor's own storage could not record the call's outcome, and no answer confirmed it, so the write may have happened. Do not repeat it; a person must check. The host has been told."
          : "Governor's own storage could not record the call's outcome; the host has been told.",
  },
} as const satisfies Record<string, ReasonDefinition>;

/** A machine-readable reason from the closed set {@link REASONS}. */
export type Reason = keyof typeof DEFINITIONS;

/** Everything known of one reason, defaults filled in. */
export interface ReasonInfo extends Omit<Required<ReasonDefinition>, "advice" | "adviceFor"> {
  readonly advice: string | undefined;
  readonly adviceFor: ((c: AdviceContext) => string | undefined) | undefined;
}

/** Every reason's record, in the table's order. */
export const REASON_INFO: { readonly [R in Reason]: ReasonInfo } = Object.fromEntries(
  Object.entries(DEFINITIONS).map(([reason, d]: [string, ReasonDefinition]) => [
    reason,
    Object.freeze({
      action: d.action,
      doc: d.doc,
      certainty: d.certainty ?? "failed",
      personResolvable: d.personResolvable ?? false,
      personDoc: d.personDoc ?? (d.personResolvable ? "yes" : ""),
      breaker: d.breaker ?? "retried",
      advice: d.advice,
      adviceFor: d.adviceFor,
      aboutWrite: d.aboutWrite ?? false,
      noEvidence: d.noEvidence ?? false,
    }),
  ]),
) as { readonly [R in Reason]: ReasonInfo };

/**
 * The closed set of machine-readable reasons. Each is listed with the action it normally comes
 * with; `decide` may turn a failure's reason into another action (e.g. `timeout` on a mutating
 * tool stops with `uncertain_mutation`).
 */
export const REASONS = Object.fromEntries(
  Object.entries(DEFINITIONS).map(([reason, d]) => [reason, d.action]),
) as { readonly [R in Reason]: (typeof DEFINITIONS)[R]["action"] };

/** Reasons a person could resolve (log in again, approve, raise a quota), so a host can ask. */
export const PERSON_RESOLVABLE: ReadonlySet<Reason> = new Set<Reason>(
  (Object.keys(REASON_INFO) as Reason[]).filter((r) => REASON_INFO[r].personResolvable),
);

/**
 * Whether a failure counts toward its tool's breaker: a retried one always (the dependency is
 * failing), and one whose reason counts whatever its action (`transport_error`).
 */
export function breakerCounts(action: Action, reason: Reason): boolean {
  return action === "retry_dependency" || REASON_INFO[reason].breaker === "always";
}

/**
 * The model's advice for a decision with `action` and `reason`, when the reason has its own: only
 * with the reason's usual action (a host reason's: in a stop). `context` is given for the
 * decision's own reason, which may then word its advice for the stop; a cause's advice is fixed.
 */
export function adviceOf(
  action: Action,
  reason: Reason,
  context?: AdviceContext,
): string | undefined {
  const info = REASON_INFO[reason];
  if (info.action !== action && !(action === "stop" && info.action === "host")) return undefined;
  return (context !== undefined ? info.adviceFor?.(context) : undefined) ?? info.advice;
}
