/**
 * A retry hint a server wrote into its error text, not into a header or a field: "try again in
 * 20s", "retry after 1m30s", "try again in 2 minutes", "Retry after 2025-03-15T09:12:44Z". Upstream
 * APIs put it in the message (OpenAI-style Go durations, Google's "Retry after <date>") and MCP
 * servers pass the message on, so it is often the only hint there is.
 */

/** The phrase, then a Go-style duration (`1m30s`, `2m0.5s`, `20s`, `250ms`). */
const GO_DURATION =
  /\b(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)(?![\w-])/i;
/** The phrase, then a number and a unit word. */
const NUMBER_UNIT =
  /\b(?:try again|retry)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*(milliseconds?|seconds?|secs?|minutes?|mins?|hours?|hrs?)\b/i;
/** The phrase, then an ISO 8601 instant. */
const INSTANT =
  /\b(?:try again|retry)\s+(?:after|at)\s+(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}))/i;

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Whether a text mentions a retry at all: most failure texts do not. */
const MENTIONS_RETRY = /try again|retry/i;

/** How much of the text is searched: hints sit in the first sentence or the error body. */
const SEARCHED = 2048;

function unitMs(word: string): number {
  const w = word.toLowerCase();
  if (w.startsWith("milli")) return 1;
  if (w.startsWith("s")) return 1000;
  if (w.startsWith("m")) return 60_000;
  return 3_600_000;
}

function goDurationMs(duration: string): number {
  let total = 0;
  for (const part of duration.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/gi)) {
    total += Number(part[1]) * (UNIT_MS[(part[2] as string).toLowerCase()] ?? 0);
  }
  return total;
}

/**
 * The retry hint in `text`, in ms from `now`, or `undefined` when the text gives none. A date in
 * the past reads as 0 (retry now), like an HTTP Retry-After date.
 */
export function retryHintInText(text: string, now: number): number | undefined {
  const head = text.length > SEARCHED ? text.slice(0, SEARCHED) : text;
  // Cheap gate: most failure texts mention neither phrase.
  if (!MENTIONS_RETRY.test(head)) return undefined;
  const go = GO_DURATION.exec(head);
  if (go) return Math.round(goDurationMs(go[1] as string));
  const worded = NUMBER_UNIT.exec(head);
  if (worded) return Math.round(Number(worded[1]) * unitMs(worded[2] as string));
  const instant = INSTANT.exec(head);
  if (instant) {
    const at = Date.parse(instant[1] as string);
    if (Number.isFinite(at)) return Math.max(0, at - now);
  }
  return undefined;
}
