/**
 * The learned last stage of the classifier (issue 27): where no policy rule, structured signal or
 * built-in rule speaks, a small linear text model reads the failure text. A multinomial logistic
 * regression over binary features (word unigrams and bigrams, with values replaced by their kind,
 * and a few structural cues), trained by `scripts/train-text-model.ts` on `test/corpus` and shipped
 * as a versioned JSON weight file. Pure and deterministic: the same text gives the same answer.
 */

import { createRequire } from "node:module";
import type { Action } from "../types.ts";
import { splitIdentifiers } from "./rules.ts";

/** The classes the model chooses between, in the order of each feature's weights. */
export const MODEL_CLASSES = [
  "correct_arguments",
  "retry_dependency",
  "switch_tool",
  "stop",
] as const satisfies readonly Exclude<Action, "host">[];

/** One of {@link MODEL_CLASSES}. */
export type ModelClass = (typeof MODEL_CLASSES)[number];

/** A weight file: what `scripts/train-text-model.ts` writes. Plain JSON. */
export interface TextModel {
  /** The file format's version; this reader knows 1. */
  readonly v: 1;
  /** What it was trained on, for people (`tool-errors.jsonl + unseen-tool-errors.jsonl`, a date). */
  readonly trainedOn: string;
  /** Weights per class in the order of {@link MODEL_CLASSES}. */
  readonly bias: readonly number[];
  /** Feature → its weight per class, in the order of {@link MODEL_CLASSES}. */
  readonly weights: Readonly<Record<string, readonly number[]>>;
}

/** What the model read in a text: its choice, how sure it is, and what weighed most. */
export interface ModelReading {
  readonly action: ModelClass;
  /** The softmax probability of `action`, in (0, 1]. */
  readonly probability: number;
  /** The softmax probability of every class, in the order of {@link MODEL_CLASSES}. */
  readonly probabilities: readonly number[];
  /** The features of the text the model knows, with their weight for `action`, largest first (at most 5). */
  readonly features: readonly { readonly feature: string; readonly weight: number }[];
}

/** How much of a text the model reads: error texts put their cause first. */
const MODEL_TEXT_LIMIT = 1000;

/** Words that open an instruction to the reader (`Please contact …`, `Ask your admin …`). */
const IMPERATIVE =
  /(?:^|[.!:;\n]\s*)(?:please\s+)?(?:ask|contact|reach out|check|ensure|make sure|verify|visit|go to|upgrade|enable|add|set|use|try|wait|confirm|grant|request|provide|update|sign in|log in)\b/i;
const URL = /\b[a-z][a-z0-9+.-]{1,20}:\/\/\S+/gi;
const PATH = /(?:^|[\s'"`(=:])(?:~|\.{1,2})?(?:\/[\w.@+-]+){2,}\/?/g;
const EMAIL = /\b[\w.+-]+@[\w-]+\.[\w.-]+\b/g;
const QUOTED = /"[^"\n]{1,200}"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|\[[^\]\n]{1,80}\]/g;
const HEXISH = /\b(?=[a-z]*\d)[0-9a-z_-]{12,}\b/gi;
const NUMBER = /\d+(?:\.\d+)?/g;
const STATUS = /(?<![\d.])([45]\d\d)(?![\d.])/g;

/**
 * The features of a failure text: `w:word`, `b:word word` (with values replaced by `#url`,
 * `#path`, `#email`, `#q` for a quoted value, `#id`, `#n` for a number), and structural cues:
 * `s:4xx` / `s:5xx` and `s:404` for status-like numbers, `c:quoted` for a quoted value,
 * `c:imperative` for an instruction to the reader. Deduplicated, in first-seen order.
 */
export function textFeatures(text: string): string[] {
  const head = text.length > MODEL_TEXT_LIMIT ? text.slice(0, MODEL_TEXT_LIMIT) : text;
  const out = new Set<string>();
  QUOTED.lastIndex = 0;
  if (QUOTED.test(head)) out.add("c:quoted");
  if (IMPERATIVE.test(head)) out.add("c:imperative");
  // Values first: a number inside a quoted value, a path or a URL is no status.
  const valueless = head
    .replace(URL, " #url ")
    .replace(EMAIL, " #email ")
    .replace(PATH, " #path ")
    .replace(QUOTED, " #q ")
    .replace(HEXISH, " #id ");
  for (const m of valueless.matchAll(STATUS)) {
    const code = m[1] as string;
    out.add(`s:${code[0]}xx`);
    out.add(`s:${code}`);
  }
  const plain = splitIdentifiers(valueless).toLowerCase().replace(NUMBER, " #n ");
  const words = plain.match(/#?[a-z]+|#n/g) ?? [];
  let previous: string | undefined;
  for (const word of words) {
    if (word.length < 2 && word !== "#n") {
      previous = undefined;
      continue;
    }
    out.add(`w:${word}`);
    if (previous !== undefined) out.add(`b:${previous} ${word}`);
    previous = word;
  }
  return [...out];
}

/**
 * The model that ships with core. Read with `require`, not `import … with { type: "json" }`:
 * Node before 20.10 cannot parse that import (core would not load on Node 20.0 to 20.9, which
 * `engines` accepts), and Node before 20.18 or 22.12 writes an ExperimentalWarning to stderr in
 * every host that imports core. The package's build copies the file beside this module.
 */
export const SHIPPED_TEXT_MODEL: TextModel = checkModel(
  createRequire(import.meta.url)("./text-model.weights.json"),
);

/**
 * A weight file checked for its shape, with a message that says what is wrong and what is
 * accepted. Throws on a bad file: a model is loaded once, by the library or a test.
 */
export function checkModel(value: unknown): TextModel {
  const fail = (what: string): never => {
    throw new TypeError(
      `text model: ${what}; expected { v: 1, trainedOn: string, bias: ${MODEL_CLASSES.length} numbers, weights: { feature: ${MODEL_CLASSES.length} numbers } }`,
    );
  };
  if (typeof value !== "object" || value === null) return fail("not an object");
  const m = value as Record<string, unknown>;
  if (m.v !== 1) return fail(`version ${JSON.stringify(m.v)} is not 1`);
  if (typeof m.trainedOn !== "string") return fail("trainedOn is not a string");
  const numbers = (w: unknown) =>
    Array.isArray(w) &&
    w.length === MODEL_CLASSES.length &&
    w.every((x) => typeof x === "number" && Number.isFinite(x));
  if (!numbers(m.bias)) return fail("bias is not a list of finite numbers");
  if (typeof m.weights !== "object" || m.weights === null) return fail("weights is not an object");
  for (const [feature, w] of Object.entries(m.weights)) {
    if (!numbers(w)) return fail(`weights of ${JSON.stringify(feature)} are not finite numbers`);
  }
  return m as unknown as TextModel;
}

/**
 * What the model reads in a text; `undefined` when the text holds no feature the model knows
 * (then it has nothing to go on, and the caller keeps its default).
 */
export function readText(
  text: string,
  model: TextModel = SHIPPED_TEXT_MODEL,
): ModelReading | undefined {
  const known: { feature: string; w: readonly number[] }[] = [];
  for (const feature of textFeatures(text)) {
    const w = Object.hasOwn(model.weights, feature) ? model.weights[feature] : undefined;
    if (w !== undefined) known.push({ feature, w });
  }
  if (known.length === 0) return undefined;
  const scores = [...model.bias];
  for (const { w } of known)
    for (let k = 0; k < scores.length; k++) scores[k] = (scores[k] as number) + (w[k] as number);
  let best = 0;
  for (let k = 1; k < scores.length; k++)
    if ((scores[k] as number) > (scores[best] as number)) best = k;
  const top = scores[best] as number;
  let sum = 0;
  for (const s of scores) sum += Math.exp(s - top);
  const features = known
    .map(({ feature, w }) => ({ feature, weight: Math.round((w[best] as number) * 1000) / 1000 }))
    .sort((a, b) => Math.abs(b.weight) - Math.abs(a.weight) || (a.feature < b.feature ? -1 : 1))
    .slice(0, 5);
  return {
    action: MODEL_CLASSES[best] as ModelClass,
    probability: 1 / sum,
    probabilities: scores.map((s) => Math.exp(s - top) / sum),
    features,
  };
}
