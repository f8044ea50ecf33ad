import type { ToolPolicy } from "../policy/policy.ts";
import { type Certainty, type Effect, PERSON_RESOLVABLE, type Reason } from "../types.ts";
import { backoffDelay } from "./backoff.ts";
import type { Classification } from "./classify.ts";
import { type LearnedOverride, learnedDemotion, type OutcomeField } from "./learned.ts";

/** The run budgets a decision can spend. */
export type BudgetName = "calls" | "failures" | "retries" | "corrections" | "switches" | "wallTime";

/** What the run knows when it asks for a decision. A snapshot: decide keeps no state. */
export interface DecideContext {
  readonly classification: Classification;
  readonly tool: ToolPolicy;
  /** The tool's effect after policy and trusted annotations. */
  readonly effect: Effect;
  /** Attempts made so far for this call (1 after the first failure). */
  readonly attempt: number;
  /** How often this fingerprint has reached the model in this run, this one included. */
  readonly repeats: number;
  /** The call carries an idempotency key the tool honors. */
  readonly keyed: boolean;
  /** The verify step's answer, when one ran. */
  readonly verified?: "absent" | "present" | "unknown";
  /**
   * The run budgets with no room left (`failures`, `retries`, `corrections`, `switches`). Decide
   * checks the budget of the action it returns, which may not be the classification's own: a
   * retry that runs out answers `switch_tool`, and spends `switches`.
   */
  readonly exhausted?: readonly BudgetName[];
  /** The server's shared retry budget has no room. */
  readonly serverRetryBudgetEmpty?: boolean;
  /** Time left before the run's deadline. */
  readonly remainingMs: number;
  /** Uniform in [0, 1), injected for deterministic tests. */
  readonly random: () => number;
  /**
   * What was learned of this server, tool and fingerprint: outcome counts decayed to now
   * (`countsAt`). Absent: nothing learned, or learning is off. It can only demote a decision
   * (`tool.learning`), never one a policy rule made.
   */
  readonly learned?: Readonly<Record<OutcomeField, number>>;
}

/** A decision: a value, never thrown. */
export type Decision =
  | {
      readonly action: "retry_dependency";
      readonly reason: Reason;
      readonly certainty: Certainty;
      readonly delayMs: number;
    }
  | { readonly action: "correct_arguments"; readonly reason: Reason; readonly certainty: Certainty }
  | {
      readonly action: "switch_tool";
      readonly reason: Reason;
      readonly certainty: Certainty;
      readonly alternatives: readonly string[];
      /** Set when learned outcomes demoted a retry that never recovers to this switch. */
      readonly learned?: LearnedOverride;
    }
  | {
      readonly action: "stop";
      readonly reason: Reason;
      readonly certainty: Certainty;
      /** The failure's own reason when the stop reason is a rule of the run (repeats, budgets). */
      readonly cause: Reason;
      /** The budget that ran out, for `budget_exhausted`. */
      readonly budget?: BudgetName;
      /** A person could resolve it (log in, approve, raise a quota, check a write). */
      readonly personResolvable: boolean;
      /**
       * Set when learned outcomes demoted the failure's decision to this stop (`learned_futile`;
       * `uncertain_mutation` for a write that may have happened).
       */
      readonly learned?: LearnedOverride;
    }
  | { readonly action: "host"; readonly reason: Reason; readonly certainty: Certainty };

/** The action-specific part of a stop decision. */
function stop(ctx: DecideContext, reason: Reason, budget?: BudgetName): Decision {
  const cause = ctx.classification.reason;
  return {
    action: "stop",
    reason,
    certainty: ctx.classification.certainty,
    cause,
    ...(budget !== undefined && { budget }),
    personResolvable: PERSON_RESOLVABLE.has(reason) || PERSON_RESOLVABLE.has(cause),
  };
}

/** Whether repeating the call cannot duplicate an effect (docs/architecture.md §4). */
export function safeToRepeat(
  certainty: Certainty,
  effect: Effect,
  keyed: boolean,
  verified?: DecideContext["verified"],
): boolean {
  return certainty !== "unknown" || effect !== "mutating" || keyed || verified === "absent";
}

function spent(ctx: DecideContext, budget: BudgetName): boolean {
  return ctx.exhausted?.includes(budget) ?? false;
}

/**
 * The demotion learned outcomes justify for `action`, if any (learned.ts). Never for a decision a
 * policy rule made (the policy wins), nor when learning is off for the tool.
 */
function demotion(
  ctx: DecideContext,
  action: "retry_dependency" | "correct_arguments" | "switch_tool",
): LearnedOverride | undefined {
  if (ctx.learned === undefined || ctx.classification.source === "policy") return undefined;
  return learnedDemotion({
    action,
    counts: ctx.learned,
    settings: ctx.tool.learning,
    hasAlternatives: ctx.tool.alternatives.length > 0,
    // Another tool after a write that may have happened could write twice.
    switchUnsafe: ctx.classification.certainty === "unknown" && ctx.effect === "mutating",
  });
}

/** A learned demotion as a decision: a switch (the repeat rule and budgets apply) or a stop. */
function demoted(ctx: DecideContext, learned: LearnedOverride): Decision {
  if (learned.to === "switch_tool") {
    if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
    if (outOfTime(ctx)) return stop(ctx, "deadline_exceeded");
    if (spent(ctx, "switches")) return stop(ctx, "budget_exhausted", "switches");
    const c = ctx.classification;
    return {
      action: "switch_tool",
      reason: c.reason,
      certainty: c.certainty,
      alternatives: ctx.tool.alternatives,
      learned,
    };
  }
  return { ...stop(ctx, "learned_futile"), learned } as Decision;
}

/**
 * The asymmetry of harm, decided here and only here, for a `mutating` tool:
 * - a correction that is a guess: one the learned text model read or left (`stopOnWrite`: it
 *   speaks only where no rule, signal or argument evidence did), one where nothing read the text
 *   at all (the `default`), or a conflict read from a bare status or word (`bareConflict`: a 409,
 *   a 412, "Conflict", with no phrasing that says what conflicts). It names nothing the model
 *   could change and may send a write again in another shape, so the run stops with a text a
 *   person can read (`person_required`) instead of going back to the model. So does a correction
 *   a rule read from one phrasing where the learned model, reading the whole text, finds a stop at
 *   least `MODEL_DISPUTE_STOP_OVER` (classify.ts) times likelier (`disputedByModel`; not when the call's arguments back it), and a
 *   correction a rule read from a text that refuses the operation as a whole in a clause naming
 *   no field and quoting no value (`wholeOperation`, whole-operation.ts: "a handler prevented the
 *   operation"; not when the call's arguments back it), and a correction a rule read on a call
 *   whose arguments and input schema the run knows, where the text names no property of the
 *   schema and echoes no value the call sent (`unbackedByCall`). A correction read from
 *   specific words (a field named, a value quoted, a schema's or an SDK's validation text, `already
 *   exists`, `not found`) still goes to the model, and so does a bare 400, 422 or "invalid": those
 *   say the call's own input was refused, which the model can read again;
 * - a retry on weak evidence (`weakRetry`: a generic word of the text such as a bare 500,
 *   "internal error", "timed out", "fetch failed", or the learned model's reading), not a
 *   structured signal or a named transient condition. The words wrap failures a retry cannot
 *   clear, and the write may have happened: the run stops (`uncertain_mutation`) instead of
 *   sending it again.
 * `decide` applies it to every correction and retry; `pnpm eval` scores its figures through it.
 */
export function stopsGuessedWrite(c: Classification, effect: Effect): boolean {
  if (effect !== "mutating") return false;
  // A policy rule that decided (it keeps the reading) always wins.
  if (c.source === "policy") return false;
  if (c.action === "retry_dependency") return c.weakRetry === true;
  if (c.action !== "correct_arguments") return false;
  return (
    (c.source === "model" && c.model?.stopOnWrite === true) ||
    c.source === "default" ||
    c.bareConflict === true ||
    c.disputedByModel === true ||
    c.wholeOperation === true ||
    c.unbackedByCall === true
  );
}

/**
 * The run's deadline has passed: a correction or a switch would give the model a turn whose call
 * preflight refuses, and a loop whose run has not stopped goes on past its wall time.
 */
function outOfTime(ctx: DecideContext): boolean {
  return ctx.remainingMs <= 0;
}

/**
 * An earlier attempt of a write may have written (`Classification.inDoubt`): a write that may have
 * happened is retried with its key or not at all, never corrected into another write or handed to
 * another tool, unless a verify step found it absent ({@link afterDoubt}). The run reads it too, to
 * ask the verify step before such a correction or switch becomes the `uncertain_mutation` stop.
 */
export function doubtForbids(c: Classification, effect: Effect): boolean {
  return c.inDoubt === true && effect === "mutating";
}

function afterDoubt(ctx: DecideContext): boolean {
  return doubtForbids(ctx.classification, ctx.effect) && ctx.verified !== "absent";
}

/** The model changes the call: it reaches the model, so the repeat rule and budgets apply. */
function correct(ctx: DecideContext): Decision {
  const c = ctx.classification;
  if (afterDoubt(ctx)) return stop(ctx, "uncertain_mutation");
  // A retry handed back to the model after its retries (`onRetriesExhausted`) is no guess.
  if (c.action === "correct_arguments" && stopsGuessedWrite(c, ctx.effect)) {
    return stop(ctx, "person_required");
  }
  if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
  if (outOfTime(ctx)) return stop(ctx, "deadline_exceeded");
  if (spent(ctx, "failures")) return stop(ctx, "budget_exhausted", "failures");
  if (spent(ctx, "corrections")) return stop(ctx, "budget_exhausted", "corrections");
  const learned = demotion(ctx, "correct_arguments");
  if (learned !== undefined) return demoted(ctx, learned);
  return { action: "correct_arguments", reason: c.reason, certainty: c.certainty };
}

/**
 * Retrying is over: another tool when the policy names one (the switch reaches the model, so the
 * repeat rule and the `switches` budget apply, as for a `switch_tool` class), else a stop with
 * what ended the retries.
 */
function giveUp(ctx: DecideContext, reason: Reason, budget?: BudgetName): Decision {
  // The target that keeps failing is one the model chose (a URL, a host): it may choose another.
  if (ctx.classification.onRetriesExhausted === "correct_arguments") return correct(ctx);
  const { alternatives } = ctx.tool;
  if (alternatives.length > 0) {
    if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
    if (outOfTime(ctx)) return stop(ctx, "deadline_exceeded");
    // The retries alone would have ended in a switch: the stop names the budget that refused it.
    if (spent(ctx, "switches")) return stop(ctx, "budget_exhausted", "switches");
    return {
      action: "switch_tool",
      reason: ctx.classification.reason,
      certainty: ctx.classification.certainty,
      alternatives,
    };
  }
  return stop(ctx, reason, budget);
}

/**
 * Decides what happens after a failure, from its classification and a snapshot of the run.
 * Pure: the clock and randomness come in through the context.
 */
export function decide(ctx: DecideContext): Decision {
  const c = ctx.classification;
  const certainty = c.certainty;
  switch (c.action) {
    case "host":
      return { action: "host", reason: c.reason, certainty };
    case "stop":
      return stop(ctx, c.reason);
    case "retry_dependency": {
      if (stopsGuessedWrite(c, ctx.effect)) return stop(ctx, "uncertain_mutation");
      if (!safeToRepeat(certainty, ctx.effect, ctx.keyed, ctx.verified)) {
        return stop(ctx, "uncertain_mutation");
      }
      const d = retry(ctx);
      if (
        d.action === "retry_dependency" ||
        safeToRepeat(certainty, ctx.effect, false, ctx.verified)
      ) {
        return d;
      }
      // A write that may have happened is retried with its key or not at all: once retrying is
      // over, neither another tool (a second write) nor a stop for another reason (which would
      // not say the write may have happened) follows it. A learned demotion stays on record.
      const learned = "learned" in d ? d.learned : undefined;
      return learned === undefined
        ? stop(ctx, "uncertain_mutation")
        : ({ ...stop(ctx, "uncertain_mutation"), learned } as Decision);
    }
    case "correct_arguments":
      return correct(ctx);
    case "switch_tool": {
      if (afterDoubt(ctx)) return stop(ctx, "uncertain_mutation");
      if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
      if (outOfTime(ctx)) return stop(ctx, "deadline_exceeded");
      if (spent(ctx, "failures")) return stop(ctx, "budget_exhausted", "failures");
      if (spent(ctx, "switches")) return stop(ctx, "budget_exhausted", "switches");
      const learned = demotion(ctx, "switch_tool");
      if (learned !== undefined) return demoted(ctx, learned);
      return { action: c.action, reason: c.reason, certainty, alternatives: ctx.tool.alternatives };
    }
  }
}

/** A dependency failure safe to repeat: a retry within the caps and budgets, else giving up. */
function retry(ctx: DecideContext): Decision {
  const c = ctx.classification;
  if (spent(ctx, "failures")) return stop(ctx, "budget_exhausted", "failures");
  // A target the model chose (a URL) goes back to the model after its retries: not demoted.
  if (c.onRetriesExhausted === undefined) {
    const learned = demotion(ctx, "retry_dependency");
    if (learned !== undefined) return demoted(ctx, learned);
  }
  if (spent(ctx, "retries")) return giveUp(ctx, "budget_exhausted", "retries");
  if (ctx.attempt >= ctx.tool.retry.attempts || ctx.serverRetryBudgetEmpty) {
    return giveUp(ctx, "retries_exhausted");
  }
  const delayMs = backoffDelay(ctx.attempt, ctx.tool.retry, ctx.random, c.retryAfterMs);
  if (delayMs === undefined) return giveUp(ctx, "retries_exhausted");
  if (delayMs >= ctx.remainingMs) return giveUp(ctx, "deadline_exceeded");
  return { action: "retry_dependency", reason: c.reason, certainty: c.certainty, delayMs };
}
