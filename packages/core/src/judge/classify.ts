import type { PolicyRule, ToolPolicy } from "../policy/policy.ts";
import { testPolicyPattern } from "../policy/policy-pattern.ts";
import { REASON_INFO } from "../reasons.ts";
import { type Action, type Certainty, REASONS, type Reason } from "../types.ts";
import { type CallEvidence, type CallFacts, readCallEvidence } from "./call-evidence.ts";
import { maskArgumentEchoes } from "./echoes.ts";
import type { Failure, LocalKind } from "./failure.ts";
import {
  classifyHttpStatus,
  IN_PROGRESS,
  isInProgressText,
  isNotRetryableText,
  matchBuiltinRules,
  ruleHead,
  type TextRule,
} from "./rules.ts";
import {
  MODEL_CLASSES,
  type ModelClass,
  type ModelReading,
  readText,
  SHIPPED_TEXT_MODEL,
  type TextModel,
} from "./text-model.ts";
import { refusesWholeOperation } from "./whole-operation.ts";

/** What kind of failure this is, who can fix it, and what is known of its effect. */
export interface Classification {
  readonly action: Action;
  readonly reason: Reason;
  readonly certainty: Certainty;
  /** A server's retry hint in ms, unclamped (decide clamps it). */
  readonly retryAfterMs?: number;
  /**
   * Which step decided: the policy, a structured signal, the built-in text rules, what the call's
   * arguments and schema show about the text (`evidence`), the learned text model (`model`, where
   * nothing else spoke), or the default (the model knew no word of the text: a correction, which
   * `decide` turns into a stop, `person_required`, on a `mutating` tool: see
   * `stopsGuessedWrite` (decide.ts)).
   */
  readonly source: "policy" | "signal" | "rule" | "evidence" | "model" | "default";
  /**
   * What the learned text model read, when it decided: how sure it was and the features that
   * weighed most (`read` is its class; `action` may differ where it was not taken). `unsure` below
   * {@link MODEL_SURE_AT}: then the correction stands (a stop read as the likeliest class and
   * {@link MODEL_UNSURE_STOP_OVER} times likelier than a correction is still taken). Every
   * correction it leaves carries `stopOnWrite`: on a `mutating` tool `decide` stops it instead
   * (`person_required`, see `stopsGuessedWrite` (decide.ts)); classify itself does not read the effect.
   */
  readonly model?: {
    readonly probability: number;
    readonly unsure: boolean;
    readonly read: ModelClass;
    readonly features: readonly { readonly feature: string; readonly weight: number }[];
    /**
     * A correction a `mutating` tool does not take (`decide` stops it): every correction the
     * learned model leaves, sure or not, read or left where a reading of another class was not
     * taken (a retry below {@link MODEL_RETRY_AT}). The model speaks only where no rule, signal or
     * argument evidence did, so what it reads names nothing the model could change in a write.
     */
    readonly stopOnWrite?: true;
  };
  /**
   * A retry read from a generic word of the text (a bare 500, "internal error", "timed out",
   * "fetch failed", "is locked": TextRule.weak in rules.ts) or by the learned text model, not from
   * a structured signal or a named transient condition. On a `mutating` tool `decide` does not
   * repeat the write on it (`stopsGuessedWrite`, decide.ts).
   */
  readonly weakRetry?: true;
  /**
   * Set by the run, not by reading the failure: an earlier attempt of this call may have written
   * (its outcome unknown, and no verify step found it absent), so the certainty is `unknown`
   * whatever this attempt's failure says. On a `mutating` tool `decide` neither asks the model to
   * correct the call nor to switch tools (either is another write, made while the first may have
   * happened): the run stops (`uncertain_mutation`).
   */
  readonly inDoubt?: true;
  /**
   * A conflict read from a bare status (409, 412) or the bare word ("Conflict", "Precondition
   * Failed": TextRule.weak in rules.ts), no specific phrasing beside it: the target's state refused
   * the call, and the text names neither what conflicts nor what the model could change. On a
   * `mutating` tool `decide` stops instead of asking the model to rewrite the write
   * (`person_required`, `stopsGuessedWrite` in decide.ts).
   */
  readonly bareConflict?: true;
  /**
   * A correction a built-in rule read from one phrasing, where the learned text model, reading the
   * whole text, finds a stop clearly likelier ({@link MODEL_DISPUTE_STOP_OVER} times a correction
   * and likelier than every other class), and the call names no argument the text is about. The
   * phrasing is often a person-only refusal's wrapper (`validation error` inside an admission
   * policy's denial). On a `mutating` tool `decide` stops instead of asking the model to rewrite the
   * write (`person_required`, `stopsGuessedWrite` in decide.ts); elsewhere the correction stands.
   * Not read for a tool the policy declares `read_only` or `idempotent` (nothing would read it).
   */
  readonly disputedByModel?: true;
  /**
   * A correction a built-in rule read from a text that refuses the operation as a whole ("a handler
   * prevented the operation", "this write operation requires a procedure") in a clause naming no
   * field and quoting no value (whole-operation.ts), and the call names no argument the text is
   * about. What refused the call is the target's state, a policy or a limit, nothing the model
   * sent. On a `mutating` tool `decide` stops instead of asking the model to rewrite the write
   * (`person_required`, `stopsGuessedWrite` in decide.ts); elsewhere the correction stands.
   * Not read for a tool the policy declares `read_only` or `idempotent` (nothing would read it).
   */
  readonly wholeOperation?: true;
  /**
   * A correction a built-in rule read on a call whose arguments and input schema the run knows,
   * where the text names no property of the schema and echoes no value the call sent: nothing of
   * the call is what the text refuses. On a `mutating` tool `decide` stops instead of asking the
   * model to rewrite the write (`person_required`, `stopsGuessedWrite` in decide.ts); elsewhere
   * the correction stands.
   */
  readonly unbackedByCall?: true;
  /**
   * What a retry that runs out becomes instead of giving up: `correct_arguments` when the failing
   * target (a URL, a host) is one the model chose, so the model may change it.
   */
  readonly onRetriesExhausted?: "correct_arguments";
  /** Extra guidance from a policy rule, for the model-facing text. */
  readonly hint?: string;
  /**
   * What the call showed about the text, when it showed anything (an argument named, a target
   * own or foreign), whether or not it changed this verdict: a decision event records it, so a
   * replay under another policy weighs the text as the run did.
   */
  readonly evidence?: CallEvidence;
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

function verdictFor(reason: Reason): Verdict {
  return { action: REASONS[reason], reason, certainty: REASON_INFO[reason].certainty };
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
  // Compiled once (at load), linear in the text, on the same capped text as the built-in rules.
  return rule.match === undefined || testPolicyPattern(rule.match, failure.text);
}

/** The position of the first policy rule of the tool that matches the failure, if any. */
export function policyRuleFor(failure: Failure, tool: ToolPolicy): number | undefined {
  const at = tool.rules.findIndex((r) => ruleMatches(r, failure));
  return at < 0 ? undefined : at;
}

/** JSON-RPC codes a server may use for a tool it does not have (docs/architecture.md §3). */
const UNKNOWN_TOOL_CODES: ReadonlySet<number> = new Set([-32601, -32602]);

/** Codes of requests refused before anything ran; other JSON-RPC errors may follow an effect. */
const REFUSED_CODES: ReadonlySet<number> = new Set([-32700, -32600, -32601, -32602]);

/** `Unknown tool: x`, `No such tool`, `Tool not found`: phrasings that name no other thing. */
const NAMELESS_UNKNOWN_TOOL = /^(?:unknown tool\b|no such tool\b|tool not found\b)/i;
/** `Tool x not found`, `tool 'x' does not exist`: the name must be the tool that was called. */
const NAMED_UNKNOWN_TOOL =
  /^tool\s+(?:named\s+|called\s+)?['"`]?([\w.:/-]+?)['"`]?\s+(?:(?:was|is)\s+)?(?:not found|does not exist|not registered|unknown)\b/i;

/**
 * An unknown tool in a JSON-RPC error: only under `-32601`/`-32602`, and only in a phrasing that
 * opens the message and names no other thing than the tool called (`Tool registry not found` is
 * not about the tool). Anything else under a JSON-RPC code is the host's.
 */
function isUnknownToolError(failure: Failure, tool: string): boolean {
  if (typeof failure.code !== "number" || !UNKNOWN_TOOL_CODES.has(failure.code)) return false;
  const text = failure.text.trimStart().slice(0, 300);
  if (NAMELESS_UNKNOWN_TOOL.test(text)) return true;
  const named = NAMED_UNKNOWN_TOOL.exec(text)?.[1];
  return named !== undefined && sameTool(named, tool);
}

/** Whether a tool a text names is the tool called. */
function sameTool(named: string, tool: string): boolean {
  const name = named.toLowerCase();
  const called = tool.toLowerCase();
  // A client may prefix the server's name (`github__search`), a server may strip one.
  return name === called || called.endsWith(name) || name.endsWith(called);
}

/**
 * The tool an unknown-tool text names, anywhere in it (`MCP error -32602: Tool kubectl not found`,
 * `Unknown tool: 'helm'`, `no tool named x`); undefined when it names none.
 */
const UNKNOWN_TOOL_NAMED_IN_TEXT =
  /\btool\s+(?:named\s+|called\s+)?['"`]?([\w.:/-]+?)['"`]?\s+(?:(?:was|is)\s+)?(?:not found|does not exist|not registered|unknown)\b|\bunknown tool\b\s*:?\s*['"`]?([\w.:/-]+)|\bno (?:such )?tool (?:named|called)\s+['"`]?([\w.:/-]+)/i;

/**
 * A tool's own text that reads as an unknown tool but names another one: the tool called exists
 * (it answered) and failed on something it uses (`deploy` answering `Tool kubectl not found`). It
 * is not the model's choice of tool that is wrong, and switching tools after a write that ran
 * could make it twice; the text is then read as a missing thing, like any `not found`.
 */
function namesAnotherTool(text: string, tool: string): boolean {
  const hit = UNKNOWN_TOOL_NAMED_IN_TEXT.exec(ruleHead(text));
  const named = hit?.[1] ?? hit?.[2] ?? hit?.[3];
  return named !== undefined && !sameTool(named.replace(/[.:]+$/, ""), tool);
}

/** What a text naming another tool as unknown is read as (the built-in rules' `not found`). */
const NOT_FOUND_RULE = {
  action: "correct_arguments",
  reason: "not_found",
  certainty: "failed",
} as const satisfies Pick<TextRule, "action" | "reason" | "certainty">;

/** Step 2: structured signals (codes, HTTP status, Node codes, draft tool-failure metadata). */
function fromSignals(failure: Failure, tool: ToolPolicy): Verdict | undefined {
  if (failure.channel === "protocol") {
    // An unknown tool is the one protocol-level failure the model can fix.
    if (isUnknownToolError(failure, tool.tool)) {
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
    // Parse errors, invalid requests, unknown methods and bad params are refused before anything
    // runs; an internal error (-32603), a server-defined one (-32000..-32099) or a code outside
    // JSON-RPC's own set may follow an effect.
    const certainty: Certainty =
      typeof code === "number" && REFUSED_CODES.has(code) ? "failed" : "unknown";
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
    // The class is the server's word: own keys only (`constructor` is not a class we know).
    const known =
      meta.class !== undefined && Object.hasOwn(TOOL_FAILURE_CLASS, meta.class)
        ? TOOL_FAILURE_CLASS[meta.class]
        : undefined;
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
 * What a verdict read from the text alone may claim. A tool that answered has run, and words in its
 * text never make its outcome certain (docs/architecture.md §4): "database is busy, try again later" may
 * follow a committed write. Only the policy, a structured signal or a verify step can say more.
 */
function textCertainty(failure: Failure, certainty: Certainty): Certainty {
  return failure.channel === "tool" ? "unknown" : certainty;
}

/**
 * Wording of an argument's problem, for a text that also names an argument. `too many` is a cue
 * of a value (`too many items`), not of the load a server refuses (`Too many requests`, `Too many
 * connections`), nor is `expected` in a throttle's `Expected available in 12 seconds`: those are
 * the transient condition itself.
 */
const ARGUMENT_CUE =
  /\b(?:invalid|must|expected(?! available\b)|required|unsupported|not (?:allowed|supported|valid|a valid)|out of range|too (?:long|large|short|small|big)|too many(?! (?:requests|connections|clients|calls|attempts|sessions|concurrent|open files)\b)|exceeds?|at (?:most|least)|should be)\b/i;

/**
 * Step 3b: what the call shows about a verdict read from the text (issue 12.3). Person-only stops
 * are never changed: they win over anything the arguments suggest.
 * - a correction whose text names a path or host that appears nowhere in the arguments, and no
 *   argument: the server's own side failed (its storage, its database host), `misconfigured`;
 * - a retry or a "not supported" whose text names an argument and says what is wrong with it:
 *   the model can fix the call (`Value for 'timeout' must be at most 60`);
 * - a correction the learned model (or the default) guessed, whose text names an argument (a
 *   property, or one by which the call breaks its schema) and says what is wrong with it: backed
 *   by the call, no longer a guess a write does not take;
 * - a retry whose target the model chose (a URL, a host): retried, then handed back to the model
 *   instead of ending the run.
 */
function weighCallEvidence(
  verdict: Classification,
  evidence: CallEvidence,
  text: string,
): Classification {
  if (verdict.action === "stop") return verdict;
  if (
    verdict.action === "correct_arguments" &&
    evidence.targets === "foreign" &&
    evidence.argument === undefined
  ) {
    return { ...verdict, action: "stop", reason: "misconfigured", source: "evidence" };
  }
  const fixable =
    verdict.action === "retry_dependency" ||
    (verdict.action === "switch_tool" && verdict.reason === "not_supported");
  // The text must name the argument (a property of the schema), not only echo a value the call
  // sent: a transient failure reports the request it refused (a URL holding an id, a dump of the
  // query's parameters), and a word of that report is no complaint about the value.
  if (fixable && evidence.argument?.by === "property" && ARGUMENT_CUE.test(text.slice(0, 4000))) {
    return {
      ...verdict,
      action: "correct_arguments",
      reason: "invalid_argument",
      source: "evidence",
    };
  }
  if (
    verdict.action === "correct_arguments" &&
    (verdict.source === "model" || verdict.source === "default") &&
    namesArgument(evidence) &&
    ARGUMENT_CUE.test(text.slice(0, 4000))
  ) {
    // The learned model's correction (or the default) is a guess a write does not take
    // (`stopOnWrite`); a text that names an argument and says what is wrong with it (`The
    // provided base path is not valid`) is not: the call backs it, as it backs a rule's.
    return { ...verdict, reason: "invalid_argument", source: "evidence" };
  }
  if (verdict.action === "retry_dependency" && evidence.targets === "own") {
    return { ...verdict, onRetriesExhausted: "correct_arguments" };
  }
  return verdict;
}

/**
 * Whether the evidence names an argument the text is about as such: a property of the schema the
 * text names, or one by which the call breaks its schema. A value only echoed may be the target's
 * own id (`Storage error while saving paper 2401.01234`), which says where, not what is wrong.
 */
function namesArgument(evidence: CallEvidence): boolean {
  const by = evidence.argument?.by;
  return by === "property" || by === "schema";
}

/**
 * A `-32603` that is the tool's own failure: a low-level MCP `Server` sends whatever its tool
 * handler threw as an internal error (`-32603`), so "No note with id \"drafts\"" arrives as a
 * JSON-RPC error. When the text names an argument of the call (echoes its value or names a schema
 * property) and reads as something the model fixes (not found, invalid, conflict), it is the
 * model's to correct, with certainty `unknown` (an internal error may follow an effect). Any other
 * `-32603` (`tool registry not found`, `Internal error`) stays the host's.
 */
function internalErrorOfTheTool(
  failure: Failure,
  signal: Verdict,
  call: CallFacts | undefined,
): Classification | undefined {
  if (call === undefined || failure.channel !== "protocol" || failure.code !== -32603) return;
  if (signal.action !== "host") return undefined;
  // Read with the call's own values masked, as every text rule reads (textForRules): an id the
  // model sent that holds a status word says nothing of what failed.
  const rule = matchBuiltinRules(textForRules(failure, call));
  if (rule === undefined || rule.action !== "correct_arguments") return undefined;
  const evidence = readCallEvidence(failure.text, call);
  // The text must name the argument: a call that breaks its schema, with a text that names none
  // of it, does not make a host's internal error the tool's own.
  if (evidence.argument === undefined || evidence.argument.by === "schema") return undefined;
  return {
    action: "correct_arguments",
    reason: rule.reason,
    certainty: "unknown",
    source: "evidence",
    evidence,
  };
}

/** The code servers send for a key still in use by a request in progress (Stripe's). */
const KEY_IN_USE = "idempotency_key_in_use";

/** A structured `code` (or `error.code`) of a result's `structuredContent` or an error's `data`. */
function codeIn(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return undefined;
  const record = value as { code?: unknown; error?: unknown };
  if (record.code !== undefined) return record.code;
  const error = record.error;
  return typeof error === "object" && error !== null
    ? (error as { code?: unknown }).code
    : undefined;
}

/**
 * Before every other step (issue 26): an answer that a request with this idempotency key is still
 * in progress, by a structured signal (`idempotency_key_in_use`, the draft metadata's class
 * `in_progress`), the tool's policy (`idempotency.inProgress`, a server's own phrasing) or the
 * built-in phrasings (rules.ts). Never a correction: the first attempt may still write.
 */
function inProgress(
  failure: Failure,
  tool: ToolPolicy,
  call: CallFacts | undefined,
): Classification | undefined {
  if (failure.channel === "local") return undefined;
  const meta = failure.toolFailure;
  if (
    meta?.class === "in_progress" ||
    meta?.code === KEY_IN_USE ||
    failure.code === KEY_IN_USE ||
    codeIn(failure.structured) === KEY_IN_USE ||
    codeIn(failure.data) === KEY_IN_USE
  ) {
    return { ...IN_PROGRESS, source: "signal" };
  }
  if (tool.idempotency.inProgress.some((p) => testPolicyPattern(p, failure.text))) {
    return { ...IN_PROGRESS, source: "policy" };
  }
  return isInProgressText(textForRules(failure, call))
    ? { ...IN_PROGRESS, source: "rule" }
    : undefined;
}

/**
 * How sure the learned text model must be for its reading to stand. Below it the reading is not
 * taken: the old default, a correction, stands, and `decide` stops a `mutating` tool instead (a
 * stop a person can read costs less than a write corrected on a guess).
 */
export const MODEL_SURE_AT = 0.5;

/** How sure the learned text model must be for a retry it reads to be taken: a retry on a guess could repeat what only a person can fix. */
export const MODEL_RETRY_AT = 0.85;

/**
 * How much likelier than a correction an unsure reading of stop must be to be taken: a near tie
 * (a text of function words the model barely knows) leaves the correction.
 */
export const MODEL_UNSURE_STOP_OVER = 1.25;

/**
 * How much likelier than a correction the learned model's reading of stop must be to dispute a
 * correction a built-in rule read (`disputedByModel`): far above a near tie, since where a rule
 * spoke the model is a second reader, and on the development sets its readings of stop below
 * three times a correction were mostly wrong where a rule read a correction.
 */
export const MODEL_DISPUTE_STOP_OVER = 3;

/**
 * Whether the learned model, reading a text a built-in rule read as a correction, disputes it: it
 * reads a stop, at least {@link MODEL_DISPUTE_STOP_OVER} times likelier than a correction.
 */
export function modelDisputesCorrection(reading: ModelReading | undefined): boolean {
  if (reading === undefined || reading.action !== "stop") return false;
  const correct = reading.probabilities[MODEL_CLASSES.indexOf("correct_arguments")] ?? 0;
  const stop = reading.probabilities[MODEL_CLASSES.indexOf("stop")] ?? 0;
  return stop >= MODEL_DISPUTE_STOP_OVER * correct;
}

/** The bars a reading of the learned text model must pass; the shipped ones are {@link MODEL_BARS}. */
export interface ModelBars {
  /** {@link MODEL_SURE_AT} */
  readonly sureAt: number;
  /** {@link MODEL_RETRY_AT} */
  readonly retryAt: number;
  /** {@link MODEL_UNSURE_STOP_OVER} */
  readonly unsureStopOver: number;
}

/** The bars the run uses. `pnpm eval` measures others against them per fold (scripts/learned-stage-bars.ts). */
export const MODEL_BARS: ModelBars = {
  sureAt: MODEL_SURE_AT,
  retryAt: MODEL_RETRY_AT,
  unsureStopOver: MODEL_UNSURE_STOP_OVER,
};

/** What is taken of a reading of the learned text model. */
export interface TakenReading {
  readonly action: ModelClass;
  /** The reading's probability is below the bar. */
  readonly unsure: boolean;
  /** The action is a correction that is a guess: `decide` stops it on a `mutating` tool. */
  readonly stopOnWrite: boolean;
}

/**
 * What the run takes of a reading of the learned text model, under `bars`. Pure: the one place the
 * bars apply (classify, and the per-fold measure of other bars in scripts/learned-stage-bars.ts).
 */
export function takeReading(reading: ModelReading, bars: ModelBars = MODEL_BARS): TakenReading {
  const correct = reading.probabilities[MODEL_CLASSES.indexOf("correct_arguments")] ?? 0;
  const stop = reading.probabilities[MODEL_CLASSES.indexOf("stop")] ?? 0;
  const unsure = reading.probability < bars.sureAt;
  // An unsure reading is not taken, except a stop the model finds likelier than every other
  // class and clearly likelier than a correction: a correction of a failure only a person can fix
  // costs calls until the repeat rule stops it, a stop a person reads costs a look.
  const action: ModelClass =
    (unsure && !(reading.action === "stop" && stop >= bars.unsureStopOver * correct)) ||
    (reading.action === "retry_dependency" && reading.probability < bars.retryAt)
      ? "correct_arguments"
      : reading.action;
  // The asymmetry of harm: a write corrected on a guess may be sent again in another shape; a
  // stop a person can read costs less. Every correction the model leaves is a guess about a write,
  // however sure it reads: the model speaks only where no rule, signal or argument evidence did,
  // so it names nothing the model could change (as a retry it reads is weak, `weakRetry`). Classify
  // marks it; `decide`, which knows the call's effect, stops it (stopsGuessedWrite in decide.ts).
  const stopOnWrite = action === "correct_arguments";
  return { action, unsure, stopOnWrite };
}

/** The reason a reading of the learned text model carries, per action. */
export const MODEL_REASON: Readonly<Record<ModelClass, Reason>> = {
  correct_arguments: "unclassified",
  retry_dependency: "unavailable",
  switch_tool: "not_supported",
  stop: "person_required",
};

/** Step 4: the learned text model, or the default when it knows no word of the text. */
function fromModel(failure: Failure, text: string, model: TextModel): Classification {
  const reading = readText(text, model);
  const certainty = textCertainty(failure, "failed");
  if (reading === undefined) {
    // Nothing read the text: the old default, a correction (on a `mutating` tool a pure guess,
    // which `decide` stops: stopsGuessedWrite).
    return { action: "correct_arguments", reason: "unclassified", certainty, source: "default" };
  }
  const { action, unsure, stopOnWrite } = takeReading(reading);
  const modelFacts = {
    probability: Math.round(reading.probability * 1000) / 1000,
    unsure,
    read: reading.action,
    features: reading.features,
    ...(stopOnWrite && { stopOnWrite: true as const }),
  };
  return {
    action,
    reason: MODEL_REASON[action],
    certainty,
    source: "model",
    model: modelFacts,
    // A retry the model reads is read from words, never from a named condition.
    ...(action === "retry_dependency" && { weakRetry: true as const }),
  };
}

/**
 * The text the built-in rules and the learned model read: the failure's, with the values of the
 * call's own arguments masked (echoes.ts). Words the model sent itself (a search pattern holding
 * "unauthorized") say nothing of the failure. Bounded: the rules read the first RULE_TEXT_LIMIT
 * characters, the model fewer.
 */
export function textForRules(failure: Failure, call: CallFacts | undefined): string {
  return call?.args === undefined
    ? failure.text
    : maskArgumentEchoes(ruleHead(failure.text), call.args);
}

/**
 * Steps 3 and 4: the built-in text rules or the learned model, weighed by what the call shows.
 * `mayWrite`: the tool may be `mutating` (the policy says so or says nothing); only then are a
 * correction's marks that only a write's decision reads (`disputedByModel`, `wholeOperation`) read.
 */
function fromText(
  failure: Failure,
  tool: string,
  call: CallFacts | undefined,
  model: TextModel,
  mayWrite: boolean,
): Classification {
  const text = textForRules(failure, call);
  const matched = matchBuiltinRules(text);
  const rule: Pick<TextRule, "action" | "reason" | "certainty" | "weak"> | undefined =
    matched?.reason === "unknown_tool" && namesAnotherTool(failure.text, tool)
      ? NOT_FOUND_RULE
      : matched;
  const read: Classification = rule
    ? {
        action: rule.action,
        reason: rule.reason,
        certainty: textCertainty(failure, rule.certainty),
        source: "rule",
        ...(rule.weak === true &&
          rule.action === "retry_dependency" && { weakRetry: true as const }),
        ...(rule.weak === true && rule.reason === "conflict" && { bareConflict: true as const }),
        // The model reads a rule's correction of a possible write too, as a second reader: see
        // `disputedByModel`. A tool the policy declares not to write skips it (and the clause
        // check): `stopsGuessedWrite` reads neither mark there, so the decision is the same.
        ...(mayWrite &&
          rule.action === "correct_arguments" &&
          modelDisputesCorrection(readText(text, model)) && { disputedByModel: true as const }),
        ...(mayWrite &&
          rule.action === "correct_arguments" &&
          refusesWholeOperation(text) && { wholeOperation: true as const }),
      }
    : fromModel(failure, text, model);
  // A server saying in words that the failure is not to be retried can only make a retry read
  // from the text more conservative, as the draft metadata's `retryable: false` does.
  const verdict: Classification =
    read.action === "retry_dependency" && isNotRetryableText(text)
      ? { ...read, action: "stop", reason: "retries_exhausted" }
      : read;
  if (call === undefined) return verdict;
  const evidence = readCallEvidence(failure.text, call);
  // The argument cue is read with the call's own values masked too (`text`).
  const weighed = weighCallEvidence(verdict, evidence, text);
  const withEvidence = (c: Classification): Classification =>
    evidence.targets === "none" && evidence.argument === undefined ? c : { ...c, evidence };
  if (evidence.argument !== undefined || weighed.action !== "correct_arguments") {
    // A correction the call backs (the text names one of its arguments, or the call plainly
    // breaks its schema at one: `breaksSchema`) is no longer the model's word against one
    // phrasing, nor a refusal of the operation as a whole: both marks are dropped. A bare conflict
    // keeps its mark: the value it echoes is most often the target's own id (in a URL's path:
    // "POST /invoices/inv_1/pay: 409"), which says what conflicts, not what to change.
    const { disputedByModel: _, wholeOperation: __, ...backed } = weighed;
    return withEvidence(backed);
  }
  // A correction a rule read where the run knows the call's schema and the text names nothing of
  // the call (no property, no value it sent): `unbackedByCall`, its evidence kept with `schema`
  // so that a replayed log (the evidence alone) reads the same.
  if (weighed.source === "rule" && (call.inputSchema !== undefined || evidence.schema === true)) {
    return { ...weighed, unbackedByCall: true, evidence: { ...evidence, schema: true } };
  }
  return withEvidence(weighed);
}

/**
 * Classifies a failure (docs/architecture.md §3): the policy's rules first, then structured signals, then
 * the built-in text rules, then the learned text model (`model`, the shipped weights unless
 * another is given), then the default (`correct_arguments`; the repeat rule stops it if it comes
 * back). Pure: no clock, no I/O.
 *
 * Certainty comes from the failure class for structured signals (a JSON-RPC code, an HTTP status,
 * the tool-failure metadata, a local kind); a verdict read from a tool's text alone is `unknown`,
 * whatever the text says, unless a policy rule that matched gives a `certainty`.
 *
 * `call` (the arguments, the tool's input schema) weighs a verdict read from the text: see
 * {@link weighCallEvidence}. Without it, the failure alone decides.
 */
export function classify(
  failure: Failure,
  tool: ToolPolicy,
  call?: CallFacts,
  model: TextModel = SHIPPED_TEXT_MODEL,
): Classification {
  const progress = inProgress(failure, tool, call);
  const signal = progress === undefined ? fromSignals(failure, tool) : undefined;
  const detected: Classification =
    progress ??
    (signal
      ? (internalErrorOfTheTool(failure, signal, call) ?? { ...signal, source: "signal" })
      : fromText(
          failure,
          tool.tool,
          call,
          model,
          tool.effect !== "read_only" && tool.effect !== "idempotent",
        ));
  const withHint =
    failure.retryAfterMs === undefined
      ? detected
      : { ...detected, retryAfterMs: failure.retryAfterMs };

  const at = policyRuleFor(failure, tool);
  const rule = at === undefined ? undefined : tool.rules[at];
  if (!rule) return withHint;
  // The policy always wins on the action. Certainty stays what the failure shows unless the rule
  // says what its author knows of this tool (e.g. "busy" is only ever sent before a write).
  return {
    ...withHint,
    action: rule.action,
    reason:
      rule.reason ??
      (rule.action === detected.action ? detected.reason : DEFAULT_REASON[rule.action]),
    ...(rule.certainty !== undefined && { certainty: rule.certainty }),
    source: "policy",
    ...(rule.hint !== undefined && { hint: rule.hint }),
  };
}
