/** Retry settings used to compute a delay. */
export interface BackoffSettings {
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly maxHintMs: number;
}

/**
 * The delay before attempt `attempt + 1`: full jitter (AWS architecture blog), i.e. uniform in
 * `[0, min(maxDelayMs, baseDelayMs * 2^(attempt-1))]`, raised to the server's hint when it gives
 * one. Returns `undefined` when the hint asks for longer than `maxHintMs`: retrying earlier than
 * the server asked would be wasted, so the caller gives up instead.
 * @param attempt attempts made so far (1 after the first failure)
 * @param random a source in [0, 1), injected so tests are deterministic
 */
export function backoffDelay(
  attempt: number,
  settings: BackoffSettings,
  random: () => number,
  hintMs?: number,
): number | undefined {
  const ceiling = Math.min(
    settings.maxDelayMs,
    settings.baseDelayMs * 2 ** Math.max(0, attempt - 1),
  );
  const jittered = Math.floor(random() * ceiling);
  if (hintMs === undefined) return jittered;
  if (hintMs > settings.maxHintMs) return undefined;
  return Math.max(jittered, Math.ceil(hintMs));
}
