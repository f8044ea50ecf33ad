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
  leave(attempt: LiveAttempt): void;
  /** Cuts every attempt in flight (the host ended the run). */
  cutAll(reason: unknown): void;
}

/**
 * One deadline timer and one listener on the run's signal for all the attempts of a run in
 * flight, not one per attempt: armed when the first attempt enters, gone when the last leaves, so
 * an idle run holds no timer and its signal no listener.
 */
export function createAttemptGuard(options: AttemptGuardOptions): AttemptGuard {
  const { deadline, now, signal } = options;
  // Usually one attempt at a time: an array, which neither grows nor shrinks its storage then.
  const live: LiveAttempt[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  const cut = (reason: unknown, byDeadline: boolean) => {
    for (const attempt of [...live]) attempt(reason, byDeadline);
  };
  const onAbort = () => cut(signal?.reason, false);
  const onDeadline = () => {
    timer = undefined;
    cut(Object.assign(new Error("The run's deadline passed"), { name: "TimeoutError" }), true);
  };
  return {
    get size() {
      return live.length;
    },
    enter(attempt) {
      live.push(attempt);
      if (live.length !== 1) return;
      signal?.addEventListener("abort", onAbort, { once: true });
      const left = deadline - now();
      if (options.enforceDeadline && left <= MAX_TIMER_MS) {
        timer = setTimeout(onDeadline, Math.max(0, left));
      }
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
