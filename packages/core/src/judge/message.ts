import { adviceOf } from "../reasons.ts";
import { type Certainty, REASONS, type Reason } from "../types.ts";
import type { Decision } from "./decide.ts";

/** What the model-facing text is made of. The observation must already be redacted. */
export interface MessageInput {
  readonly tool: string;
  /** The redacted failure text. */
  readonly observation: string;
  readonly decision: Decision;
  /** Guidance from a policy rule. */
  readonly hint?: string;
  /** How often this failure has reached the model in this run, this one included. */
  readonly repeats?: number;
  /** The repeat limit that stops the run. */
  readonly maxRepeats?: number;
  /** Attempts made for this call. */
  readonly attempts?: number;
}

/** A character the end of a sentence drops: whitespace (as `\s` reads it) or a period. */
const TRAILING = /[\s.]/;

function sentence(text: string): string {
  const trimmed = text.trim();
  // Read from the end: a pattern anchored at the end would be tried at every position.
  let end = trimmed.length;
  while (end > 0 && TRAILING.test(trimmed.charAt(end - 1))) end--;
  const t = end === trimmed.length ? trimmed : trimmed.slice(0, end);
  return t === "" ? "the call failed." : `${t}.`;
}

function stopText(input: MessageInput, d: Extract<Decision, { action: "stop" }>): string {
  return (
    adviceOf("stop", d.reason, {
      repeats: input.repeats,
      maxRepeats: input.maxRepeats,
      attempts: input.attempts,
      budget: d.budget,
      certainty: d.certainty,
    }) ??
    adviceOf("stop", d.cause) ??
    "Nobody in this run can fix it."
  );
}

/**
 * Composes the one short text the model reads: which tool, what was observed, what may change on
 * the next call, and when the run will stop. Never says "try again" for what retrying cannot fix.
 * @example
 * // get_note: No note with id "drafts". Known ids: welcome, release-notes. Use an identifier
 * // that exists; look it up first if unsure. (failure 2 of 3: the same failure again ends the run)
 */
export function composeMessage(input: MessageInput): string {
  const { tool, decision: d } = input;
  const head = `${tool}: ${sentence(input.observation)}`;
  const hint = input.hint ? ` ${sentence(input.hint)}` : "";
  switch (d.action) {
    case "correct_arguments": {
      // A transient reason here means retries ran out on a target the model chose.
      const advice =
        adviceOf("correct_arguments", d.reason) ??
        (REASONS[d.reason] === "retry_dependency"
          ? "What the call points at still fails after retries; point it at another address or resource."
          : "Change the arguments as the error describes, then call again.");
      return `${head}${hint} ${advice}${repeatNote(input)}`;
    }
    case "switch_tool": {
      const alts =
        d.alternatives.length > 0
          ? `Use ${d.alternatives.join(" or ")} instead.`
          : "Choose another tool.";
      const why = adviceOf("switch_tool", d.reason) ?? "This tool cannot serve this request now.";
      return `${head}${hint} ${why} ${alts}${repeatNote(input)}`;
    }
    case "stop":
      return `${head}${hint} ${stopText(input, d)} The run stops here.`;
    case "retry_dependency":
      return `${head} The service is temporarily failing; the call is being retried.`;
    case "host":
      return `${tool}: the call failed.`;
  }
}

function repeatNote(input: MessageInput): string {
  const { repeats, maxRepeats } = input;
  if (repeats === undefined || maxRepeats === undefined) return "";
  if (repeats >= maxRepeats - 1) {
    return ` (failure ${repeats} of ${maxRepeats}: the same failure again ends the run)`;
  }
  return repeats >= 2 ? ` (failure ${repeats} of ${maxRepeats})` : "";
}

/**
 * The model's text for a call not made because another call had already ended the run over a write
 * of its own (in doubt, or half done): that write's advice ("do not repeat it") is not this call's.
 * `failed`: an attempt of the call was made and failed with no effect (the server answered, or it
 * never left), and its retry is what was not made.
 */
export function notMadeText(tool: string, failed = false): string {
  const what = failed ? "the call failed and was not tried again" : "the call was not made";
  return `${tool}: ${what}: the run had already ended, stopped by another call's write. The run stops here.`;
}

/**
 * The model's text for a call the ledger answered as done before without a result to replay
 * (`idempotency.replay: false`, a result the store let go, a key a host settled by hand): what
 * an adapter hands back where the tool's own result would be, so no loop is handed `undefined`.
 */
export function replayedText(tool: string): string {
  return `${tool}: this call already succeeded before; it was not run again, and its result was not kept.`;
}

/**
 * The model's text for a failure routed to the host (a `HostError` an adapter must still answer a
 * tool call with): the tool and a fixed observation, no part of the raw error.
 */
export function hostErrorText(error: {
  readonly tool: string;
  readonly stopReason: Reason;
  readonly certainty?: Certainty | undefined;
}): string {
  const reason = error.stopReason;
  return composeMessage({
    tool: error.tool,
    observation: "the call could not be completed",
    decision: {
      action: "stop",
      reason,
      certainty: error.certainty ?? "unknown",
      cause: reason,
      personResolvable: false,
    },
  });
}
