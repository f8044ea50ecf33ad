import type { Failure, LocalKind } from "./failure.ts";
import type { PolicyRule, ToolPolicy } from "./policy.ts";
import { classifyHttpStatus, matchBuiltinRules } from "./rules.ts";
import { type Action, type Certainty, REASONS, type Reason } from "./types.ts";

/** What kind of failure this is, who can fix it, and what is known of its effect. */
export interface Classification {
  readonly action: Action;
  readonly reason: Reason;
  readonly certainty: Certainty;
  /** A server's retry hint in ms, unclamped (decide clamps it). */
  readonly retryAfterMs?: number;
  /** Which step decided: the policy, a structured signal, the built-in text rules, or the default. */
  readonly source: "policy" | "signal" | "rule" | "default";
  /** Extra guidance from a policy rule, for the model-facing text. */
  readonly hint?: string;
}

type Verdict = Omit<Classification, "source" | "retryAfterMs" | "hint">;

const DEFAULT_REASON: Record<Action, Reason> = {
  correct_arguments: "invalid_argument",
  retry_dependency: "unavailable",
  switch_tool: "not_supported",
  stop: "business_rule",
  host: "protocol_error",
};

const LOCAL: Record<LocalKind, Verdict> = {
  timeout: { action: "retry_dependency", reason: "timeout", certainty: "unknown" },
  aborted: { action: "stop", reason: "aborted", certainty: "unknown" },
  connection_closed: {
    action: "retry_dependency",
    reason: "connection_closed",
    certainty: "unknown",
  },
  connection_refused: {
    action: "retry_dependency",
    reason: "connection_refused",
    certainty: "not_sent",
  },
  not_connected: { action: "host", reason: "session_expired", certainty: "not_sent" },
  network: { action: "retry_dependency", reason: "network_error", certainty: "unknown" },
  http_status: { action: "host", reason: "transport_error", certainty: "unknown" },
  malformed_result: { action: "host", reason: "malformed_response", certainty: "unknown" },
  spawn_failed: { action: "host", reason: "transport_error", certainty: "not_sent" },
  thrown: { action: "host", reason: "transport_error", certainty: "unknown" },
};

/** Draft tool-failure classes (`_meta["io.modelcontextprotocol/toolFailure"].class`) we know. */
const TOOL_FAILURE_CLASS: Record<string, Reason> = {
  invalid_argument: "invalid_argument",
  invalid_arguments: "invalid_argument",
  validation: "invalid_argument",
  not_found: "not_found",
  conflict: "conflict",
  rate_limited: "rate_limited",
  rate_limit: "rate_limited",
  unavailable: "unavailable",
  transient: "unavailable",
  timeout: "timeout",
  unauthorized: "unauthorized",
  authentication: "unauthorized",
  forbidden: "forbidden",
  permission: "forbidden",
  quota: "quota_exceeded",
  quota_exceeded: "quota_exceeded",
  business_rule: "business_rule",
  not_supported: "not_supported",
  unsupported: "not_supported",
};

const RETRY_CERTAINTY: Partial<Record<Reason, Certainty>> = {
  timeout: "unknown",
  upstream_error: "unknown",
  network_error: "unknown",
  connection_closed: "unknown",
  connection_refused: "not_sent",
};

function verdictFor(reason: Reason): Verdict {
  return { action: REASONS[reason], reason, certainty: RETRY_CERTAINTY[reason] ?? "failed" };
}

function ruleMatches(rule: PolicyRule, failure: Failure): boolean {
  if (rule.code !== undefined) {
    const code = rule.code;
    const hit =
      failure.code === code ||
      failure.httpStatus === code ||
      (typeof code === "string" && String(failure.code) === code);
    if (!hit) return false;
  }
  return rule.match === undefined || new RegExp(rule.match, "i").test(failure.text);
}

function isUnknownTool(text: string): boolean {
  return matchBuiltinRules(text)?.reason === "unknown_tool";
}

/** Step 2: structured signals (codes, HTTP status, Node codes, draft tool-failure metadata). */
function fromSignals(failure: Failure, tool: ToolPolicy): Verdict | undefined {
  if (failure.channel === "protocol") {
    // An unknown tool is the one protocol-level failure the model can fix.
    if (isUnknownTool(failure.text)) {
      return { action: "switch_tool", reason: "unknown_tool", certainty: "failed" };
    }
    const code = failure.code;
    if (code === -32602 && tool.invalidParamsAsArguments) {
      return { action: "correct_arguments", reason: "invalid_argument", certainty: "failed" };
    }
    if (code === -32042)
      return { action: "host", reason: "elicitation_required", certainty: "failed" };
    if (code === -32001 && /session/i.test(failure.text)) {
      return { action: "host", reason: "session_expired", certainty: "failed" };
    }
    const certainty: Certainty =
      code === -32603 || (typeof code === "number" && code > -32600 && code <= -32000)
        ? "unknown"
        : "failed";
    return { action: "host", reason: "protocol_error", certainty };
  }
  if (failure.channel === "local" && failure.local !== undefined) {
    if (failure.local === "http_status" && failure.httpStatus !== undefined) {
      if (failure.httpStatus === 404) {
        return { action: "host", reason: "session_expired", certainty: "not_sent" };
      }
      const byStatus = classifyHttpStatus(failure.httpStatus);
      if (byStatus && (byStatus.action === "retry_dependency" || byStatus.action === "stop")) {
        return byStatus;
      }
    }
    return LOCAL[failure.local];
  }
  // Tool channel: draft metadata first, then a status, then a system error code.
  const meta = failure.toolFailure;
  if (meta) {
    const known = meta.class === undefined ? undefined : TOOL_FAILURE_CLASS[meta.class];
    if (meta.retryable === true) {
      const reason = known && REASONS[known] === "retry_dependency" ? known : "unavailable";
      return verdictFor(reason);
    }
    if (known) {
      const v = verdictFor(known);
      // A server saying "not retryable" can only make us more conservative.
      return meta.retryable === false && v.action === "retry_dependency"
        ? { action: "stop", reason: "retries_exhausted", certainty: v.certainty }
        : v;
    }
  }
  if (failure.httpStatus !== undefined) {
    const byStatus = classifyHttpStatus(failure.httpStatus);
    if (byStatus) return byStatus;
  }
  if (typeof failure.code === "string" && /^E[A-Z]+$/.test(failure.code)) {
    const local = failure.local;
    if (local && local !== "thrown") return LOCAL[local];
  }
  return undefined;
}

/**
 * Classifies a failure (DESIGN.md §3): the policy's rules first, then structured signals, then
 * the built-in text rules, then the default (`correct_arguments`; the repeat rule stops it if it
 * comes back). Pure: no clock, no I/O.
 */
export function classify(failure: Failure, tool: ToolPolicy): Classification {
  const signal = fromSignals(failure, tool);
  const textRule = signal ? undefined : matchBuiltinRules(failure.text);
  const detected: Classification = signal
    ? { ...signal, source: "signal" }
    : textRule
      ? {
          action: textRule.action,
          reason: textRule.reason,
          certainty: textRule.certainty,
          source: "rule",
        }
      : {
          action: "correct_arguments",
          reason: "unclassified",
          certainty: "failed",
          source: "default",
        };
  const withHint =
    failure.retryAfterMs === undefined
      ? detected
      : { ...detected, retryAfterMs: failure.retryAfterMs };

  const rule = tool.rules.find((r) => ruleMatches(r, failure));
  if (!rule) return withHint;
  // The policy always wins on the action; certainty stays a property of the failure class.
  return {
    ...withHint,
    action: rule.action,
    reason:
      rule.reason ??
      (rule.action === detected.action ? detected.reason : DEFAULT_REASON[rule.action]),
    source: "policy",
    ...(rule.hint !== undefined && { hint: rule.hint }),
  };
}
