import type { CallOutcome, ModelResult } from "@governor/core";
import { GovernorStopError } from "@governor/core";

/** What a governed call hands back to the Agents SDK: the tool's value, or Governor's text. */
export type Settled<T> =
  | { readonly kind: "ok"; readonly value: T }
  | { readonly kind: "model"; readonly result: ModelResult };

/**
 * Turns an outcome into what the SDK gets: `ok` and `model` are returned; a `stop` is thrown as a
 * {@link GovernorStopError}, which ends `run()` (the SDK rethrows a tool's error when the tool
 * has no error function).
 */
export function settle<T>(
  outcome: CallOutcome<T>,
  tool: string,
  server: string | undefined,
): Settled<T> {
  if (outcome.kind === "ok") return { kind: "ok", value: outcome.value };
  if (outcome.kind === "model") return { kind: "model", result: outcome.result };
  throw new GovernorStopError({
    reason: outcome.reason,
    summary: outcome.summary,
    tool,
    server,
    personResolvable: outcome.personResolvable,
    idempotencyKey: outcome.idempotencyKey,
    hostError: outcome.hostError,
    modelText: outcome.result.content[0].text,
  });
}
