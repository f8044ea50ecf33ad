/** Breaker state of one tool: plain JSON, kept in the store so workers share it. */
export interface BreakerState {
  /** Consecutive failures of the dependency. */
  readonly failures: number;
  /** Epoch ms when the breaker opened; absent while closed. */
  readonly openedAt?: number;
  /** Epoch ms when a half-open probe was let through. */
  readonly probeAt?: number;
}

/** Breaker settings (from the policy). */
export interface BreakerSettings {
  readonly threshold: number;
  readonly cooldownMs: number;
}

/** `closed` lets calls through; `open` refuses; `probe` lets this one call through to test. */
export type BreakerVerdict = "closed" | "open" | "probe";

/** Whether a call may go through now, and the state to store if it is a probe. */
export function breakerCheck(
  state: BreakerState | undefined,
  settings: BreakerSettings,
  now: number,
): { verdict: BreakerVerdict; next?: BreakerState } {
  if (state?.openedAt === undefined) return { verdict: "closed" };
  if (now - state.openedAt < settings.cooldownMs) return { verdict: "open" };
  // Half-open: one probe per cool-down period.
  if (state.probeAt !== undefined && now - state.probeAt < settings.cooldownMs) {
    return { verdict: "open" };
  }
  return { verdict: "probe", next: { ...state, probeAt: now } };
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
