// What the run's call tests (run.test.ts, run-decisions.test.ts) make their calls with: tool
// answers, a governor with a fixed jitter, the text the model reads, and a driver for fake timers.
// Test support only (`*.support.ts` is left out of the build).
import { vi } from "vitest";
import type { PolicyInput } from "../policy/policy.ts";
import { createGovernor } from "./governor.ts";
import type { CallOutcome } from "./run.ts";

/** A tool's failure answer (`isError`) with one text part. */
export const text = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });

/** A tool's success answer with one text part. */
export const ok = (t: string) => ({ content: [{ type: "text", text: t }] });

/** A governor whose backoff jitter is fixed (`random` 0.5), without metrics. */
export function governor(
  policy: PolicyInput = {},
  extra: Parameters<typeof createGovernor>[1] = {},
) {
  return createGovernor(policy, { random: () => 0.5, metrics: false, ...extra });
}

/** What the model reads of a failure outcome; an `ok` outcome throws. */
export function modelText(outcome: CallOutcome<unknown>): string {
  if (outcome.kind === "ok") throw new Error("expected a failure outcome, got ok");
  return outcome.result.content[0].text;
}

/** Settles pending timers and microtasks until the promise resolves (fake timers). */
export async function drive<T>(promise: Promise<T>): Promise<T> {
  let done = false;
  const tracked = promise.finally(() => {
    done = true;
  });
  for (let i = 0; i < 200 && !done; i++) await vi.advanceTimersByTimeAsync(1_000);
  return tracked;
}
