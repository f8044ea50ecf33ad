/** Node fires a longer timeout after 1 ms; a deadline further away needs no timer. */
const MAX_TIMER_MS = 2_147_483_647;

/** An attempt in flight, as the guard sees it: ends it at once (`deadline` when that passed). */
export type LiveAttempt = (reason: unknown, deadline: boolean) => void;

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
   * one microtask later, unless every attempt has left by then. An executor that answers at once
   * (a promise already settled) costs no timer.
   */
  started(): void;
  leave(attempt: LiveAttempt): void;
  /** Cuts every attempt in flight (the host ended the run). */
  cutAll(reason: unknown): void;
}

const SETTLED = Promise.resolve();

/**
 * One deadline timer and one listener on the run's signal for all the attempts of a run in
 * flight, not one per attempt: the listener added when the first attempt enters, the timer armed
 * once an attempt is still running a microtask after it started; both gone when the last leaves,
 * so an idle run holds no timer and its signal no listener.
 */
export function createAttemptGuard(options: AttemptGuardOptions): AttemptGuard {
  const { deadline, now, signal } = options;
  // Usually one attempt at a time: an array, which neither grows nor shrinks its storage then.
  const live: LiveAttempt[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  // A check is queued: the timer is armed then if an attempt is still in flight.
  let checking = false;
  const cut = (reason: unknown, byDeadline: boolean) => {
    for (const attempt of [...live]) attempt(reason, byDeadline);
  };
  const onAbort = () => cut(signal?.reason, false);
  const onDeadline = () => {
    timer = undefined;
    cut(Object.assign(new Error("The run's deadline passed"), { name: "TimeoutError" }), true);
  };
  const arm = () => {
    checking = false;
    if (live.length === 0 || timer !== undefined) return;
    const left = deadline - now();
    if (left <= MAX_TIMER_MS) timer = setTimeout(onDeadline, Math.max(0, left));
  };
  return {
    get size() {
      return live.length;
    },
    enter(attempt) {
      live.push(attempt);
      if (live.length === 1) signal?.addEventListener("abort", onAbort, { once: true });
    },
    started() {
      if (checking || timer !== undefined || !options.enforceDeadline || live.length === 0) return;
      checking = true;
      SETTLED.then(arm);
    },
    leave(attempt) {
      const at = live.lastIndexOf(attempt);
      if (at === -1) return;
      if (at === live.length - 1) live.pop();
      else live.splice(at, 1);
      if (live.length !== 0) return;
      signal?.removeEventListener("abort", onAbort);
      if (timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
    },
    cutAll(reason) {
      cut(reason, false);
    },
  };
}
