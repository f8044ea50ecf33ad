import type { BudgetName } from "../judge/decide.ts";
import type { LocalKind } from "../judge/failure.ts";
import type { LearnedOverride, OutcomeField } from "../judge/learned.ts";
import type { Action, Certainty, Channel, Origin, Reason } from "../types.ts";

/** The version of the event schema. Bumped on any incompatible change. */
export const EVENT_SCHEMA_VERSION = 1;

/** Why a run ended: a stop reason, or `completed` when the host ended it. */
export type RunEndReason = Reason | "completed";

/** What a run did, reported when it ends (docs/architecture.md §2). Plain JSON. */
export interface RunSummary {
  readonly runId: string;
  /** `completed` when the host ended the run, else the stop reason. */
  readonly reason: RunEndReason;
  /** For `budget_exhausted`: which budget. */
  readonly budget?: BudgetName;
  /** A person could resolve the stop (log in, approve, raise a quota, check a write). */
  readonly personResolvable: boolean;
  /** Tool calls the run made (each `run.call`), and attempts sent to tools (retries included). */
  readonly calls: number;
  readonly attempts: number;
  /** Failures by the action decided. */
  readonly actions: Readonly<Record<Action, number>>;
  readonly retries: number;
  readonly failures: number;
  /** Fingerprints of failures in this run, with counts. */
  readonly fingerprints: Readonly<Record<string, number>>;
  /** Wall time from start to end, in ms. */
  readonly durationMs: number;
  /** The last failure in redacted form, if any. */
  readonly lastFailure?: { readonly tool: string; readonly reason: Reason; readonly text: string };
  /** Decisions were computed but not enforced. */
  readonly observeOnly: boolean;
}

interface EventBase {
  readonly v: typeof EVENT_SCHEMA_VERSION;
  /** Epoch ms. */
  readonly at: number;
  readonly runId: string;
  /** Set by the JSON Lines sink when it cut the event's fields to fit its line limit. */
  readonly truncated?: true;
}

/**
 * The failure a decision judged, as the log keeps it: the signals classification reads, and its
 * text redacted like the model's (never the raw text).
 */
export interface RecordedFailure {
  readonly channel: Channel;
  readonly origin: Origin;
  /** Redacted with the policy's redaction settings, as the model would read it. */
  readonly text: string;
  /** Redaction changed the text (a secret, a path, or the length cap): rules saw the raw one. */
  readonly redacted?: true;
  readonly code?: number | string;
  readonly httpStatus?: number;
  readonly retryAfterMs?: number;
  readonly local?: LocalKind;
  readonly toolFailure?: {
    readonly class?: string;
    readonly code?: string;
    readonly retryable?: boolean;
  };
}

/**
 * What re-deciding a failure under another policy needs (`governor replay`), beyond the event's
 * own fields. Optional in schema v1: lines written before it existed lack it.
 */
export interface DecisionInput {
  /** A hash of the call (server, tool, canonical arguments): equal for identical calls. */
  readonly callHash: string;
  readonly failure: RecordedFailure;
  /** The tool's MCP annotations, when the call carried them. */
  readonly annotations?: {
    readonly readOnlyHint?: boolean;
    readonly destructiveHint?: boolean;
    readonly idempotentHint?: boolean;
  };
  /** Time since the run started, in ms. */
  readonly elapsedMs: number;
  /** Time left before the deadline the host gave the run, when it gave one. */
  readonly hostDeadlineMs?: number;
  /** The answer of the policy's verify step, when one ran for this attempt. */
  readonly verified?: "absent" | "present" | "unknown";
  /** The server's shared retry budget refused a retry (state shared across runs). */
  readonly retryBudgetEmpty?: true;
  /**
   * What had been learned of this server, tool and fingerprint when the decision was made: the
   * outcome counts decayed to then (state shared across runs). Absent when nothing was learned.
   */
  readonly learned?: Readonly<Record<OutcomeField, number>>;
  /**
   * What the call's arguments showed about the raw failure text (names only, never values): the
   * argument the text is about, and whether the paths and hosts it names are the call's own or
   * foreign. Absent when it showed nothing (or on lines written before it was recorded).
   */
  readonly evidence?: {
    readonly argument?: {
      readonly name: string;
      readonly by: "value" | "property" | "schema";
    };
    readonly targets: "none" | "own" | "foreign";
    /** The call's schema was known and the text named nothing of the call (`unbackedByCall`). */
    readonly schema?: true;
  };
}

/** A decision after a failed attempt, or on a call refused before its first attempt. */
export interface DecisionEvent extends EventBase {
  readonly type: "decision";
  readonly tool: string;
  readonly server?: string;
  /** The call's number in its run (1 for the first `run.call`); absent from older v1 lines. */
  readonly call?: number;
  /** The attempt that failed (1 for the first); 0 when the call was refused before any attempt. */
  readonly attempt: number;
  readonly action: Action;
  readonly reason: Reason;
  /** The failure's own reason when the decision's reason is a run rule. */
  readonly cause?: Reason;
  readonly certainty: Certainty;
  readonly fingerprint: string;
  /** Backoff before the next attempt, for `retry_dependency`. */
  readonly delayMs?: number;
  /** The call's idempotency key (mutating calls), e.g. to settle an uncertain write by hand. */
  readonly idempotencyKey?: string;
  /** Computed in observe-only mode: not enforced. */
  readonly observed: boolean;
  /**
   * Learned outcomes demoted the failure's decision (docs/learning.md): what it would have been,
   * what it became, and the decayed evidence.
   */
  readonly learned?: LearnedOverride;
  /** What re-deciding needs (see {@link DecisionInput}); absent from older v1 lines. */
  readonly input?: DecisionInput;
}

/** How one `run.call` ended. */
export type CallOutcomeKind = "ok" | "replayed" | "model" | "stop" | "host";

/** One `run.call`, when it ends. */
export interface CallEvent extends EventBase {
  readonly type: "call";
  readonly tool: string;
  readonly server?: string;
  /** The call's number in its run (1 for the first `run.call`); absent from older v1 lines. */
  readonly call?: number;
  /** As a decision's `input.callHash`: equal for identical calls; absent from older v1 lines. */
  readonly callHash?: string;
  readonly outcome: CallOutcomeKind;
  readonly attempts: number;
  readonly durationMs: number;
}

/** The end of a run. */
export interface RunEndEvent extends EventBase {
  readonly type: "run_end";
  readonly summary: RunSummary;
}

/** Every event Governor emits: one versioned JSON schema (`"v": 1`), one JSON line each. */
export type GovernorEvent = DecisionEvent | CallEvent | RunEndEvent;
