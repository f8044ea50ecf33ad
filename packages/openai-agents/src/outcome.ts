import type { CallOutcome, ModelResult } from "@governor/core";
import { GovernorStopError } from "@governor/core";
import { isDeliverable, replayedText, undeliverableText } from "@governor/core/judge";

/** What a governed call hands back to the Agents SDK: the tool's value, or Governor's text. */
export type Settled<T> =
  | { readonly kind: "ok"; readonly value: T; readonly replayed: boolean }
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
  if (outcome.kind === "ok") {
    return { kind: "ok", value: outcome.value, replayed: outcome.replayed };
  }
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

/**
 * A function tool's answer: its value, or, for a write the ledger answered as done before without
 * a result to replay (`idempotency.replay: false`, a result the store let go, a key a host settled
 * by hand), a text saying so rather than `undefined`, which the SDK would hand the model as no
 * output at all. A value nested too deep to hand over (deliverable.ts), which the SDK would write
 * as its JSON text or, past what `JSON.stringify` reads, as "[object with circular references]",
 * is `undeliverableText`: the call was made, the model must not make it again blindly.
 */
export function toolValue(settled: Settled<unknown>, tool: string): unknown {
  if (settled.kind !== "ok") return settled.result.content[0].text;
  if (settled.replayed && settled.value === undefined) return replayedText(tool);
  return isDeliverable(settled.value) ? settled.value : undeliverableText(tool);
}

/**
 * An MCP tool's answer as a `CallToolResult`: a replay without a kept result of that shape becomes
 * a text result saying the call was done before (the SDK reads `content` of what it gets; an
 * `undefined` there throws out of the agent's run).
 */
export function toolResult<R extends { readonly content: readonly unknown[] }>(
  settled: Settled<R>,
  tool: string,
): R | { content: { type: "text"; text: string }[]; isError?: true } {
  if (settled.kind !== "ok") return { content: [...settled.result.content], isError: true };
  const value: unknown = settled.value;
  if (
    settled.replayed &&
    (typeof value !== "object" ||
      value === null ||
      !Array.isArray((value as { content?: unknown }).content))
  ) {
    return { content: [{ type: "text", text: replayedText(tool) }] };
  }
  return settled.value;
}

/**
 * What the Agents SDK's default error function gives the model for a tool that threw
 * (`defaultToolErrorFunction` of `@openai/agents-core` 0.20, not exported). Observe-only mode
 * enforces nothing, and a governed tool, which has no error function of its own, answers a
 * tool's own error with it: the model reads what it would without Governor.
 */
export const SDK_TOOL_ERROR_TEXT = "An error occurred while running the tool. Please try again.";
