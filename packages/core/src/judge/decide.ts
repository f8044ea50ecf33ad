import type { ToolPolicy } from "../policy/policy.ts";
import { type Certainty, type Effect, PERSON_RESOLVABLE, type Reason } from "../types.ts";
import { backoffDelay } from "./backoff.ts";
import type { Classification } from "./classify.ts";

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
}

/** A decision: a value, never thrown (STYLE.md §1). */
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

/** Whether repeating the call cannot duplicate an effect (DESIGN.md §4). */
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

/** The model changes the call: it reaches the model, so the repeat rule and budgets apply. */
function correct(ctx: DecideContext): Decision {
  const c = ctx.classification;
  if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
  if (spent(ctx, "failures")) return stop(ctx, "budget_exhausted", "failures");
  if (spent(ctx, "corrections")) return stop(ctx, "budget_exhausted", "corrections");
  return { action: "correct_arguments", reason: c.reason, certainty: c.certainty };
}

/**
 * Retrying is over: another tool when the policy names one and the run may still switch (the
 * switch reaches the model, so the repeat rule and the `switches` budget apply), else a stop.
 */
function giveUp(ctx: DecideContext, reason: Reason, budget?: BudgetName): Decision {
  // The target that keeps failing is one the model chose (a URL, a host): it may choose another.
  if (ctx.classification.onRetriesExhausted === "correct_arguments") return correct(ctx);
  const { alternatives } = ctx.tool;
  if (alternatives.length > 0 && !spent(ctx, "switches")) {
    if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
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
      if (!safeToRepeat(certainty, ctx.effect, ctx.keyed, ctx.verified)) {
        return stop(ctx, "uncertain_mutation");
      }
      if (spent(ctx, "failures")) return stop(ctx, "budget_exhausted", "failures");
      if (spent(ctx, "retries")) return giveUp(ctx, "budget_exhausted", "retries");
      if (ctx.attempt >= ctx.tool.retry.attempts || ctx.serverRetryBudgetEmpty) {
        return giveUp(ctx, "retries_exhausted");
      }
      const delayMs = backoffDelay(ctx.attempt, ctx.tool.retry, ctx.random, c.retryAfterMs);
      if (delayMs === undefined) return giveUp(ctx, "retries_exhausted");
      if (delayMs >= ctx.remainingMs) return giveUp(ctx, "deadline_exceeded");
      return { action: "retry_dependency", reason: c.reason, certainty, delayMs };
    }
    case "correct_arguments":
      return correct(ctx);
    case "switch_tool": {
      if (ctx.repeats >= ctx.tool.maxRepeats) return stop(ctx, "repeated_failure");
      if (spent(ctx, "failures")) return stop(ctx, "budget_exhausted", "failures");
      if (spent(ctx, "switches")) return stop(ctx, "budget_exhausted", "switches");
      return { action: c.action, reason: c.reason, certainty, alternatives: ctx.tool.alternatives };
    }
  }
}
