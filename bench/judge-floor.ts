/**
 * What judging an unseen failure text cannot cost less than, against what it costs: over the
 * corpus texts of test/corpus/tool-errors.jsonl with a new request id (a UUID) appended every
 * round, as `judge_unseen_vs_regex` of `pnpm bench` judges them, CPU time in µs per text (median
 * of rounds) of
 * - the bench's baseline, one case-insensitive regex test;
 * - one pass of JavaScript over the text (a table lookup per character), the least a tokenizer
 *   shared by the rules, the normalizer and the redactor would cost;
 * - lowercasing the text, and the fingerprint's hash (JSON of its parts, SHA-256): a correct
 *   judge does both whatever its design;
 * - `matchBuiltinRules`, `normalizeText`, `redact` and `assessFailure` as they are;
 * and how many regex executions and substring searches each of the three runs per text (each one
 * more pass over the text).
 *
 *   pnpm build && node --import tsx bench/judge-floor.ts
 *
 * ROUNDS (default 60) sets the measured rounds.
 */
import { hash, randomUUID } from "node:crypto";
import * as core from "@governor/core";
import * as judge from "@governor/core/judge";
import { toolErrors } from "./judge-texts.ts";
import { median } from "./stats.ts";

const policy = core.loadPolicy({});
const tools = toolErrors.map((e) => judge.resolveToolPolicy(policy, e.tool));
const { maxLength, emails, patterns } = policy.redaction;
const regex = /timed? ?out|unavailable|not found|invalid|denied/i;
const table = new Uint8Array(128).map((_, i) => i & 7);

type Fn = (text: string, i: number, failure: core.Failure) => unknown;
const fns: Record<string, Fn> = {
  "regex test (baseline)": (text) => regex.test(text),
  "one JS pass": (text) => {
    let h = 0;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      h += code < 128 ? (table[code] as number) : 1;
    }
    return h;
  },
  toLowerCase: (text) => text.toLowerCase(),
  "fingerprint hash": (text) => hash("sha256", JSON.stringify(["tool", "tool", null, text])),
  matchBuiltinRules: (text) => judge.matchBuiltinRules(text),
  normalizeText: (text) => judge.normalizeText(text),
  redact: (text) => judge.redact(text, { maxLength, emails, patterns }),
  assessFailure: (_text, i, failure) =>
    judge.assessFailure(failure, {
      policy,
      tool: tools[i] as (typeof tools)[number],
      effect: "read_only",
    }),
};

const ROUNDS = Number(process.env.ROUNDS ?? 60);
let sink = 0;
process.stdout.write("µs per unseen text, CPU time (median of rounds)\n");
for (const [name, fn] of Object.entries(fns)) {
  const us: number[] = [];
  for (let r = 0; r < ROUNDS + 5; r++) {
    const texts = toolErrors.map((e) => `${e.text} (request ${randomUUID()})`);
    const failures = texts.map((text) =>
      core.failureFromResult({ content: [{ type: "text", text }], isError: true }),
    );
    // Flat strings, as the bench's regex test finds them (judging flattened them).
    for (const text of texts) sink += text.charCodeAt(0);
    const start = process.cpuUsage();
    for (let i = 0; i < texts.length; i++) {
      sink += fn(texts[i] as string, i, failures[i] as core.Failure) === undefined ? 0 : 1;
    }
    const used = process.cpuUsage(start);
    if (r >= 5) us.push((used.user + used.system) / texts.length);
  }
  process.stdout.write(`${name.padEnd(22)} ${median(us).toFixed(3).padStart(8)}\n`);
}

// Passes over the text: regex executions and substring searches per text, counted by wrapping
// the two built-ins (after the timing: a wrapped built-in is slower).
let execs = 0;
let searches = 0;
const exec = RegExp.prototype.exec;
const includes = String.prototype.includes;
const indexOf = String.prototype.indexOf;
RegExp.prototype.exec = function (this: RegExp, text: string) {
  execs++;
  return exec.call(this, text);
};
String.prototype.includes = function (this: string, ...args: [string, number?]) {
  searches++;
  return includes.apply(this, args);
};
String.prototype.indexOf = function (this: string, ...args: [string, number?]) {
  searches++;
  return indexOf.apply(this, args);
};
process.stdout.write("passes per unseen text: regex executions, substring searches\n");
for (const name of ["matchBuiltinRules", "normalizeText", "redact"]) {
  const fn = fns[name] as Fn;
  execs = 0;
  searches = 0;
  const texts = toolErrors.map((e) => `${e.text} (request ${randomUUID()})`);
  for (let i = 0; i < texts.length; i++) fn(texts[i] as string, i, undefined as never);
  process.stdout.write(
    `${name.padEnd(22)} ${(execs / texts.length).toFixed(1).padStart(6)} ${(searches / texts.length).toFixed(1).padStart(6)}\n`,
  );
}
RegExp.prototype.exec = exec;
String.prototype.includes = includes;
String.prototype.indexOf = indexOf;
if (sink < 0) throw new Error("unreachable");
