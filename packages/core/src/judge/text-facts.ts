import { TextFacts } from "./text-memo.ts";

/**
 * What the judge made of recent failure texts: the rule that matched, the normalized text, the
 * hosts and paths named, the redactions; one entry per text, one slot per function (each kept the
 * second time its function is offered the text). The same failure text comes back with every
 * retry and every run, and these functions are pure.
 *
 * Texts of up to 8192 characters (the redactor's input; the others are offered at most their
 * first 4096), 1024 of them, and at most 768 K characters of texts and values together.
 * @internal Not part of the public API.
 */
export const judgeFacts = new TextFacts({
  maxEntries: 1024,
  maxChars: 768 * 1024,
  maxTextLength: 8192,
});
