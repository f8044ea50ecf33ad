// What the judging tests of a built-in text rule share: a tool of the empty policy, its failure
// from a text, the classification of that text, and what the run decides on a call's first failure.
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Effect } from "../types.ts";
import { classify } from "./classify.ts";
import { decide } from "./decide.ts";
import { type Failure, failureFromResult } from "./failure.ts";

/** A tool of the empty policy. */
export const tool = resolveToolPolicy(loadPolicy({}), "t");

/** The failure of an error result whose one text block is `text`. */
export const textFailure = (text: string): Failure =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });

/** How `text` is classified, without the call's facts. */
export const read = (text: string) => classify(textFailure(text), tool);

/** What the run does on the first failure of a call to a tool of `effect` (`keyed`: a key it honours). */
export const firstDecision = (text: string, effect: Effect, keyed = false) =>
  decide({
    classification: read(text),
    tool,
    effect,
    attempt: 1,
    repeats: 1,
    keyed,
    remainingMs: Number.POSITIVE_INFINITY,
    random: () => 0.5,
  });
