import type { ToolAnnotations } from "../judge/effect.ts";
import type { Failure } from "../judge/failure.ts";
import type { DecisionInput, RecordedFailure } from "./events.ts";

/**
 * The failure as a decision event keeps it, for `governor replay`: the signals classification
 * reads (channel, origin, codes, status, retry hint, local kind, tool-failure metadata) and the
 * text already redacted for the model (`text`). Never the raw text, `data` or the raw error.
 */
export function recordedFailure(failure: Failure, text: string): RecordedFailure {
  const meta = failure.toolFailure;
  const toolFailure = meta && {
    ...(meta.class !== undefined && { class: meta.class }),
    ...(meta.code !== undefined && { code: meta.code }),
    ...(meta.retryable !== undefined && { retryable: meta.retryable }),
  };
  return {
    channel: failure.channel,
    origin: failure.origin,
    text,
    ...(text !== failure.text && { redacted: true as const }),
    ...(failure.code !== undefined && { code: failure.code }),
    ...(failure.httpStatus !== undefined && { httpStatus: failure.httpStatus }),
    ...(failure.retryAfterMs !== undefined && { retryAfterMs: failure.retryAfterMs }),
    ...(failure.local !== undefined && { local: failure.local }),
    ...(toolFailure !== undefined && { toolFailure }),
  };
}

/** The three hints that bear on effects, without the rest of a tool's annotations. */
export function effectHints(
  annotations: ToolAnnotations,
): NonNullable<DecisionInput["annotations"]> {
  return {
    ...(typeof annotations.readOnlyHint === "boolean" && {
      readOnlyHint: annotations.readOnlyHint,
    }),
    ...(typeof annotations.destructiveHint === "boolean" && {
      destructiveHint: annotations.destructiveHint,
    }),
    ...(typeof annotations.idempotentHint === "boolean" && {
      idempotentHint: annotations.idempotentHint,
    }),
  };
}
