import { deadlineError, MAX_TIMER_MS } from "./waits.ts";

/** An attempt in flight, as the guard sees it. */
export interface LiveAttempt {
  /** The attempt's tool cannot write (`read_only`): a stop Governor decides cuts it too. */
  readonly readOnly: boolean;
  /** Ends the attempt at once (`deadline` when that passed). */
  cut(reason: unknown, deadline: boolean): void;
}

/** An attempt whose executor's promise the guard watches (`AttemptGuard.watch`). */
export interface WatchedAttempt {
  /** The executor's promise settled: with `value`, or rejected with it (`thrown`). */
  answered(thrown: boolean, value: unknown): void;
}

/** Options of {@link createAttemptGuard}. */
export interface AttemptGuardOptions {
  /** Epoch ms after which attempts in flight are cut. */
  readonly deadline: number;
  readonly now: () => number;
  /** Observe-only enforces no deadline: only the host's signal cuts. */
  readonly enforceDeadline: boolean;
  /** The run's signal: aborting it cuts every attempt in flight. */
  readonly signal?: AbortSignal | undefined;
}

/** The attempts of a run in flight, and what cuts them. */
export interface AttemptGuard {
  /** Attempts in flight now. */
  readonly size: number;
  /** An attempt starts: it is cut with the others until it {@link leave}s. */
  enter(attempt: LiveAttempt): void;
  /**
   * The attempt that entered last has started (its executor returned): the deadline timer is armed
   * on the next tick (once the microtasks queued now have run), unless every attempt has left by
   * then. An executor that answers at once (a promise already settled) costs no timer, and calls
   * that start and end within one run of microtasks (a loop over executors that answer at once)
   * share one check.
   */
  started(): void;
  leave(attempt: LiveAttempt): void;
  /** Cuts every attempt in flight (the host ended the run). */
  cutAll(reason: unknown): void;
  /** Cuts the attempts in flight whose tool cannot write (Governor stopped the run). */
  cutReads(reason: unknown): void;
  /**
   * Tells `attempt` when `running` (its executor's promise, a native one) settles. The guard's own
   * two handlers, made once per run, watch one promise at a time; a promise given while that one
   * is pending (parallel calls, or an attempt cut before its executor answered) gets two handlers
   * of its own. The guard's handlers are freed only when the promise they watch settles, never at
   * a cut: an answer can only ever reach its own attempt.
   */
  watch(attempt: WatchedAttempt, running: Promise<unknown>): void;
}

/**
 * Handlers of its own for a promise the guard's are not free to watch (a function apart from
 * `watch`: closures made there would make every call of it allocate its scope).
 */
function watchApart(attempt: WatchedAttempt, running: Promise<unknown>): void {
  Promise.prototype.then.call(
    running,
    (value: unknown) => attempt.answered(false, value),
    (thrown: unknown) => attempt.answered(true, thrown),
  );
}

/**
 * Guards with an attempt started and not yet checked. One tick for all of them, not one per run: a
 * tick holds what it is given until it runs, and a loop of runs whose calls answer at once never
 * lets ticks run while it goes on (1M queued checks held every run's guard, 0.5 GB). A guard leaves
 * this set when its last attempt leaves, so it holds only guards with attempts in flight.
 */
const unchecked: Guard[] = [];
let tickQueued = false;

/** How many guards wait for the next check (for tests). */
export function guardsAwaitingCheck(): number {
  return unchecked.length;
}

function checkAll(): void {
  tickQueued = false;
  // An array, each guard knowing its place: no hashing, and its storage kept from call to call.
  for (let i = unchecked.length - 1; i >= 0; i--) unchecked[i]?.check();
}

/**
 * One deadline timer and one listener on the run's signal for all the attempts of a run in
 * flight, not one per attempt: the listener added when the first attempt enters, the timer armed
 * once an attempt is still running on the tick after it started; both gone when the last leaves,
 * so an idle run holds no timer and its signal no listener.
 *
 * Arming on the next tick rather than at once loses no cut: a timer fires only from the event
 * loop, which runs no timer before the microtasks and the ticks queued now have run. The check is
 * `process.nextTick`, not a promise reaction: a reaction per attempt was about a tenth of a
 * successful call's allocation. One tick checks every guard waiting for it ({@link unchecked}).
 */
export function createAttemptGuard(options: AttemptGuardOptions): AttemptGuard {
  return new Guard(options);
}

/**
 * A class whose callbacks (the signal's listener, the deadline's, the check) are made on first
 * use: every run makes a guard, most never arm a timer or listen to a signal.
 */
class Guard implements AttemptGuard {
  readonly #options: AttemptGuardOptions;
  // Usually one attempt at a time: an array, which neither grows nor shrinks its storage then.
  readonly #live: LiveAttempt[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #onAbort: (() => void) | undefined;
  /** This guard's place in {@link unchecked}, or -1. */
  #slot = -1;
  /** The attempt whose executor's promise the guard's own handlers watch now. */
  #watched: WatchedAttempt | undefined = undefined;
  #onValue: ((value: unknown) => void) | undefined = undefined;
  #onThrown: ((thrown: unknown) => void) | undefined = undefined;

  constructor(options: AttemptGuardOptions) {
    this.#options = options;
  }

  get size(): number {
    return this.#live.length;
  }

  enter(attempt: LiveAttempt): void {
    const live = this.#live;
    live.push(attempt);
    const { signal } = this.#options;
    if (live.length === 1 && signal !== undefined) {
      this.#onAbort ??= () => this.#cut(signal.reason, false);
      signal.addEventListener("abort", this.#onAbort, { once: true });
    }
  }

  started(): void {
    if (this.#timer !== undefined || !this.#options.enforceDeadline || this.#live.length === 0) {
      return;
    }
    if (this.#slot === -1) {
      this.#slot = unchecked.length;
      unchecked.push(this);
    }
    if (!tickQueued) {
      tickQueued = true;
      process.nextTick(checkAll);
    }
  }

  leave(attempt: LiveAttempt): void {
    const live = this.#live;
    const at = live.lastIndexOf(attempt);
    if (at === -1) return;
    if (at === live.length - 1) live.pop();
    else live.splice(at, 1);
    if (live.length !== 0) return;
    this.#unlist();
    if (this.#onAbort !== undefined)
      this.#options.signal?.removeEventListener("abort", this.#onAbort);
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  cutAll(reason: unknown): void {
    this.#cut(reason, false);
  }

  cutReads(reason: unknown): void {
    for (const attempt of [...this.#live]) if (attempt.readOnly) attempt.cut(reason, false);
  }

  // Why the guard watches: two handlers made per attempt were about a tenth of a successful
  // call's allocation (bench/allocation-sites.ts); made once per run, they cost nothing per call.
  watch(attempt: WatchedAttempt, running: Promise<unknown>): void {
    // Promise.prototype's `then` (a host may have wrapped the promise's own `then`, which could
    // call a handler twice, or keep it and call it later).
    if (this.#watched !== undefined) {
      watchApart(attempt, running);
      return;
    }
    this.#watched = attempt;
    if (this.#onValue === undefined) this.#makeHandlers();
    Promise.prototype.then.call(running, this.#onValue, this.#onThrown);
  }

  /** Made apart from `watch`: a closure made there would keep its first attempt alive. */
  #makeHandlers(): void {
    this.#onValue = (value: unknown) => this.#answered(false, value);
    this.#onThrown = (thrown: unknown) => this.#answered(true, thrown);
  }

  #answered(thrown: boolean, value: unknown): void {
    const attempt = this.#watched as WatchedAttempt;
    this.#watched = undefined;
    attempt.answered(thrown, value);
  }

  #cut(reason: unknown, byDeadline: boolean): void {
    for (const attempt of [...this.#live]) attempt.cut(reason, byDeadline);
  }

  /** Leaves {@link unchecked}: the last guard there takes this one's place. */
  #unlist(): void {
    const at = this.#slot;
    if (at === -1) return;
    this.#slot = -1;
    const last = unchecked.pop() as Guard;
    if (last !== this) {
      unchecked[at] = last;
      last.#slot = at;
    }
  }

  /** The tick after an attempt started: arms the deadline timer if an attempt is still in flight. */
  check(): void {
    this.#unlist();
    if (this.#live.length === 0 || this.#timer !== undefined) return;
    const { deadline, now } = this.#options;
    const left = deadline - now();
    // A module function and this guard as its argument: no closure made per timer armed.
    if (left <= MAX_TIMER_MS) this.#timer = setTimeout(deadlinePassed, Math.max(0, left), this);
  }

  /** The deadline timer fired: every attempt in flight is cut. */
  deadlinePassed(): void {
    this.#timer = undefined;
    this.#cut(deadlineError(), true);
  }
}

/** The deadline timer's callback. */
function deadlinePassed(guard: Guard): void {
  guard.deadlinePassed();
}
