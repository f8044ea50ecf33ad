import { boundName } from "../judge/bound-name.ts";
import type { CallEvidence } from "../judge/call-evidence.ts";
import type { ToolAnnotations } from "../judge/effect.ts";
import type { Failure } from "../judge/failure.ts";
import type { DecisionInput, RecordedFailure } from "./events.ts";

/**
 * The failure as a decision event keeps it, for `governor replay`: the signals classification
 * reads (channel, origin, codes, status, retry hint, local kind, tool-failure metadata) and the
 * text already redacted for the model (`text`). Never the raw text, `data` or the raw error.
 */
export function recordedFailure(failure: Failure, text: string): RecordedFailure {
  // A tool's own code and failure metadata are strings it chose: a server may put a message, a
  // connection string or a token there. Bounded as names are; a changed one marks the record
  // redacted, as a changed text does (a rule saw the raw value).
  let changed = text !== failure.text;
  const bound = <V>(value: V): V => {
    if (typeof value !== "string") return value;
    const out = boundName(value);
    if (out !== value) changed = true;
    return out as V;
  };
  const meta = failure.toolFailure;
  const toolFailure = meta && {
    ...(meta.class !== undefined && { class: bound(meta.class) }),
    ...(meta.code !== undefined && { code: bound(meta.code) }),
    ...(meta.retryable !== undefined && { retryable: meta.retryable }),
  };
  const code = bound(failure.code);
  return {
    channel: failure.channel,
    origin: failure.origin,
    text,
    ...(changed && { redacted: true as const }),
    ...(code !== undefined && { code }),
    ...(failure.httpStatus !== undefined && { httpStatus: failure.httpStatus }),
    ...(failure.retryAfterMs !== undefined && { retryAfterMs: failure.retryAfterMs }),
    ...(failure.local !== undefined && { local: failure.local }),
    ...(toolFailure !== undefined && { toolFailure }),
  };
}

/**
 * The call evidence as a decision event keeps it: names only. An argument's name is the model's
 * or the schema's choice, bounded as tool names are.
 */
export function recordedEvidence(evidence: CallEvidence): NonNullable<DecisionInput["evidence"]> {
  const { argument, targets } = evidence;
  const schema = evidence.schema === true ? { schema: true as const } : {};
  return argument === undefined
    ? { targets, ...schema }
    : { argument: { name: boundName(argument.name), by: argument.by }, targets, ...schema };
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
