/** Breaker state of one tool: plain JSON, kept in the store so workers share it. */
export interface BreakerState {
  /** Consecutive failures of the dependency. */
  readonly failures: number;
  /** Epoch ms when the breaker opened; absent while closed. */
  readonly openedAt?: number;
}

/** Breaker settings (from the policy). */
export interface BreakerSettings {
  readonly threshold: number;
  readonly cooldownMs: number;
}

/**
 * `closed` lets calls through; `open` refuses; `probe` (half-open) may let one call through to
 * test the tool: the run lets exactly one caller per cool-down through, with the store's atomic
 * counter.
 */
export type BreakerVerdict = "closed" | "open" | "probe";

// The verdicts, made once: a check on every call allocates nothing.
const CLOSED: { readonly verdict: BreakerVerdict } = Object.freeze({ verdict: "closed" });
const OPEN: { readonly verdict: BreakerVerdict } = Object.freeze({ verdict: "open" });
const PROBE: { readonly verdict: BreakerVerdict } = Object.freeze({ verdict: "probe" });

/** Whether a call may go through now. */
export function breakerCheck(
  state: BreakerState | undefined,
  settings: BreakerSettings,
  now: number,
): { readonly verdict: BreakerVerdict } {
  if (state?.openedAt === undefined) return CLOSED;
  return now - state.openedAt < settings.cooldownMs ? OPEN : PROBE;
}

/** The state after a call's outcome: success closes; a dependency failure counts toward opening. */
export function breakerAfter(
  state: BreakerState | undefined,
  settings: BreakerSettings,
  outcome: "success" | "failure",
  now: number,
): BreakerState | undefined {
  if (outcome === "success") return undefined;
  const failures = (state?.failures ?? 0) + 1;
  if (state?.openedAt !== undefined || failures >= settings.threshold) {
    return { failures, openedAt: now };
  }
  return { failures };
}
