/**
 * The words of docs/architecture.md §2 as types: channels, origins, certainty, effects, actions and the
 * closed set of reasons a decision carries into metrics.
 */

/** Where a failure surfaced: the tool reported it, the peer sent a JSON-RPC error, or the client failed. */
export type Channel = "tool" | "protocol" | "local";

/** Who produced the error object: this process (`local`) or the server (`peer`). Untagged means `peer`. */
export type Origin = "local" | "peer";

/**
 * What is known of the call's effect.
 * - `not_sent`: provably never reached the server.
 * - `failed`: the server answered with a failure that happens before any effect.
 * - `unknown`: the effect may have happened.
 */
export type Certainty = "not_sent" | "failed" | "unknown";

/** What a tool does to the world. Anything nobody described is `mutating`. */
export type Effect = "read_only" | "idempotent" | "mutating";

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
 * The closed set of machine-readable reasons. Each is listed with the action it normally comes
 * with; `decide` may turn a failure's reason into another action (e.g. `timeout` on a mutating
 * tool stops with `uncertain_mutation`).
 */
export const REASONS = {
  // correct_arguments: the model can fix the call
  invalid_argument: "correct_arguments",
  not_found: "correct_arguments",
  conflict: "correct_arguments",
  unclassified: "correct_arguments",
  // retry_dependency: transient, the runtime retries
  rate_limited: "retry_dependency",
  unavailable: "retry_dependency",
  timeout: "retry_dependency",
  upstream_error: "retry_dependency",
  network_error: "retry_dependency",
  connection_closed: "retry_dependency",
  connection_refused: "retry_dependency",
  // switch_tool: another tool can serve the request
  unknown_tool: "switch_tool",
  not_supported: "switch_tool",
  circuit_open: "switch_tool",
  denied_by_policy: "switch_tool",
  // stop: nobody in the loop can fix it
  unauthorized: "stop",
  forbidden: "stop",
  quota_exceeded: "stop",
  business_rule: "stop",
  misconfigured: "stop",
  partial_success: "stop",
  aborted: "stop",
  deadline_exceeded: "stop",
  uncertain_mutation: "stop",
  repeated_failure: "stop",
  loop_detected: "stop",
  budget_exhausted: "stop",
  retries_exhausted: "stop",
  learned_futile: "stop",
  not_approved: "stop",
  person_required: "stop",
  // host: protocol-level, never shown to the model
  protocol_error: "host",
  session_expired: "host",
  malformed_response: "host",
  elicitation_required: "host",
  transport_error: "host",
  store_unavailable: "host",
} as const satisfies Record<string, Action>;

/** A machine-readable reason from the closed set {@link REASONS}. */
export type Reason = keyof typeof REASONS;

/** Reasons a person could resolve (log in again, approve, raise a quota), so a host can ask. */
export const PERSON_RESOLVABLE: ReadonlySet<Reason> = new Set<Reason>([
  "unauthorized",
  "forbidden",
  "quota_exceeded",
  "misconfigured",
  "not_approved",
  "person_required",
  "uncertain_mutation",
  "partial_success",
  "elicitation_required",
  "session_expired",
]);

/** A value or a promise of it: what store and hook methods return. */
export type MaybePromise<T> = T | Promise<T>;
