import type { BudgetName } from "../judge/decide.ts";
import type { Budgets } from "../policy/policy.ts";

/** Counters a run spends; each is checked and taken in one synchronous step. */
export type CountedBudget = Exclude<BudgetName, "wallTime">;

/**
 * Per-run budgets. `take` reserves one unit atomically: JavaScript runs it without interleaving,
 * so parallel calls of one run cannot overshoot a budget.
 */
export interface RunBudgets {
  /** Reserves one unit; false (nothing taken) when the budget is spent. */
  take(name: CountedBudget): boolean;
  /** Whether one more unit is available, without taking it. */
  has(name: CountedBudget): boolean;
  /** Gives back one unit taken for work that did not happen. */
  refund(name: CountedBudget): void;
  /** Units used so far. */
  used(): Readonly<Record<CountedBudget, number>>;
  /** Units of one budget used so far (no copy of the others made). */
  usedOf(name: CountedBudget): number;
  /** Units of one budget this run used itself: {@link usedOf} without what it started with. */
  ownOf(name: CountedBudget): number;
}

/**
 * Creates the budget counters of one run from the policy's limits; a run that goes on from another
 * (`RunOptions.continues`) starts with what that one had used.
 */
export function createRunBudgets(limits: Budgets, from?: RunBudgets): RunBudgets {
  const counters = new Counters(limits);
  if (from !== undefined) counters.startFrom(from);
  return counters;
}

/** A class, not a closure per method: every run makes one. */
class Counters implements RunBudgets {
  readonly #limits: Budgets;
  readonly #used: Record<CountedBudget, number> = {
    calls: 0,
    failures: 0,
    retries: 0,
    corrections: 0,
    switches: 0,
  };

  /** What the run started with (a run going on from another); none by default. */
  #before: Readonly<Record<CountedBudget, number>> | undefined;

  constructor(limits: Budgets) {
    this.#limits = limits;
  }

  /** Starts with what another run's counters had used (a run going on from it). */
  startFrom(from: RunBudgets): void {
    const before = from.used();
    this.#before = before;
    Object.assign(this.#used, before);
  }

  has(name: CountedBudget): boolean {
    return this.#used[name] < this.#limits[name];
  }

  take(name: CountedBudget): boolean {
    if (this.#used[name] >= this.#limits[name]) return false;
    this.#used[name] += 1;
    return true;
  }

  refund(name: CountedBudget): void {
    if (this.#used[name] > 0) this.#used[name] -= 1;
  }

  usedOf(name: CountedBudget): number {
    return this.#used[name];
  }

  ownOf(name: CountedBudget): number {
    return this.#used[name] - (this.#before?.[name] ?? 0);
  }

  used(): Readonly<Record<CountedBudget, number>> {
    return { ...this.#used };
  }
}
