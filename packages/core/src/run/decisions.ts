// The run's state handed to the pure `decide`, and the budgets its decision spends.
import type { Classification } from "../judge/classify.ts";
import { type BudgetName, type DecideContext, type Decision, decide } from "../judge/decide.ts";
import { type CallState, honoursKey } from "./call-state.ts";
import { countModelRepeat, modelRepeatsOf, type RunState } from "./run-state.ts";

/** The budgets decide checks, in this order. */
const CHECKED = ["failures", "retries", "corrections", "switches"] as const;

/**
 * Every spent budget: decide checks the one of the action it returns (a retry that runs out
 * switches tools, and spends `switches`, not `retries`). Undefined when none is (no array made).
 */
function exhaustedBudgets(r: RunState): BudgetName[] | undefined {
  let out: BudgetName[] | undefined;
  for (const b of CHECKED) {
    if (!r.budgets.has(b)) {
      out ??= [];
      out.push(b);
    }
  }
  return out;
}

/** The decision on the run's state right now (pure; spends nothing). */
export function decideNow(
  state: CallState,
  c: Classification,
  print: string,
  serverRetryBudgetEmpty = false,
): Decision {
  const r = state.run;
  const exhausted = exhaustedBudgets(r);
  const ctx: Mutable<DecideContext> = {
    classification: c,
    tool: state.tool,
    effect: state.effect,
    attempt: state.attempts,
    repeats: (modelRepeatsOf(r, print) ?? 0) + 1,
    keyed: honoursKey(state),
    remainingMs: r.deadline - r.core.now(),
    random: r.core.random,
  };
  // What only some decisions have, set when present (no object spread per decision).
  const { verified, learned } = state;
  if (verified !== undefined) ctx.verified = verified;
  if (exhausted !== undefined) ctx.exhausted = exhausted;
  if (serverRetryBudgetEmpty) ctx.serverRetryBudgetEmpty = serverRetryBudgetEmpty;
  if (learned !== undefined) ctx.learned = learned;
  return decide(ctx);
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * Decides and spends, in one synchronous step (no await between reading and taking). Undefined,
 * deciding and spending nothing, once the run has ended (not in observe-only): a call that awaited
 * something (a store, the learned read, the server's retry budget) while another call stopped the
 * run gets the run's end, as a call admitted after it would. A run that goes on from an ended one
 * (`RunOptions.continues`) starts with what it had spent and told: the ended run spending or
 * telling more after that would be budget and tellings the chain gets twice.
 */
export function commit(
  state: CallState,
  c: Classification,
  print: string,
  serverRetryBudgetEmpty = false,
  isFailure = true,
): Decision | undefined {
  const r = state.run;
  if (r.ended !== undefined && !r.observeOnly) return undefined;
  const { budgets } = r;
  const d = decideNow(state, c, print, serverRetryBudgetEmpty);
  if (isFailure) budgets.take("failures");
  if (d.action === "retry_dependency") budgets.take("retries");
  if (d.action === "correct_arguments" || d.action === "switch_tool") {
    budgets.take(d.action === "correct_arguments" ? "corrections" : "switches");
    countModelRepeat(r, print);
  }
  return d;
}
