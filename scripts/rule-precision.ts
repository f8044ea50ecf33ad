/**
 * How often each built-in text rule is right, measured (issue 27): the rule table's writers read
 * the corpus, so a rule's precision there is in-sample; the used blind sets (test/blind to
 * test/blind4) were never used to WRITE rules before the calibration work, only to watch their
 * aggregates, so their figure is reported apart from the corpus's and is the nearer to honest one.
 * Once this script has been used to choose anything, those sets are in-sample too.
 *
 * Every labelled line (test/corpus both files, test/blind..test/blind4; NOT test/blind5, which this
 * script never opens) is classified as `pnpm eval` classifies a blind line (classify with the
 * tool's effect as the line declares it, the run's decision: scripts/eval-decided.ts). For each rule
 * that decided (`Classification.rule`, the rule's position in BUILTIN_RULES), printed per group
 * (corpus, used blind sets) and apart for non-ambiguous and ambiguous lines: fires, right,
 * precision, servers, and for rules that read a retry or a correction how many wrong firings were on
 * a `mutating` tool (the dangerous kinds). Then the run's figures per set (unambiguous accuracy,
 * dangerous decisions by stage) as the shipped code decides, and the leave-one-set-out check of
 * the weak-tier threshold among the used blind sets (precision measured on the corpus and three of
 * them, the fourth scored).
 *
 * Usage: node --conditions=source --import tsx scripts/rule-precision.ts [--json] [--min-fires=N]
 */

import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { failureFromResult } from "@governor/core";
import { type Classification, classify } from "@governor/core/judge";
import {
  BUILTIN_RULES,
  explainBuiltinMatch,
  isInProgressText,
} from "../packages/core/src/judge/rules.ts";
import {
  MODEL_CLASSES,
  readText,
  SHIPPED_TEXT_MODEL,
} from "../packages/core/src/judge/text-model.ts";
import { decidedAction, lineToolPolicy } from "./eval-decided.ts";
import { type CorpusLine, readCorpusLines } from "./text-model-corpus.ts";

/** A labelled line, as far as this script reads it. */
export interface Line extends CorpusLine {
  readonly tool?: string;
}

export interface LabelledSet {
  readonly name: string;
  readonly lines: readonly Line[];
}

/** One line as the run decides it. */
export interface Decided {
  readonly line: Line;
  readonly set: string;
  readonly c: Classification;
  readonly predicted: string;
}

/** A rule's figures over some lines. */
export interface RuleFigures {
  fires: number;
  right: number;
  servers: Set<string>;
  /** Wrong firings on a `mutating` tool, for a rule that reads a retry or a correction. */
  wrongMutating: number;
}

/** Classifies every line of the sets as `pnpm eval` does a blind line. */
export function decideAll(sets: readonly LabelledSet[]): Decided[] {
  return sets.flatMap((s) =>
    s.lines.map((line) => {
      const failure = failureFromResult({
        content: [{ type: "text", text: line.text }],
        isError: true,
      });
      const c = classify(failure, lineToolPolicy(line));
      return { line, set: s.name, c, predicted: decidedAction(c, line.effect) };
    }),
  );
}

/** The name a rule is reported under: its position and reason (`#12 not_found`). */
export function ruleName(index: number): string {
  const rule = BUILTIN_RULES[index];
  return `#${index} ${rule?.reason ?? "?"}`;
}

/**
 * The key a decided line's rule is counted under, or undefined when no built-in rule decided. A
 * classification says only that a rule decided (`source: "rule"`); which one is found again the
 * way `governor classify --explain` finds it (explainBuiltinMatch), on the same text (no call
 * facts here, so nothing of the text is masked): the "in progress" phrasings first, as classify
 * checks them first.
 */
function ruleKey(d: Decided): string | undefined {
  if (d.c.source !== "rule") return undefined;
  if (isInProgressText(d.line.text)) return "in_progress";
  const hit = explainBuiltinMatch(d.line.text);
  if (hit === undefined) return `(none) ${d.c.reason}`;
  // An unknown-tool phrasing that names another tool is read as `not found` (classify.ts).
  return hit.rule.reason === "unknown_tool" && d.c.reason === "not_found"
    ? `${ruleName(hit.index)}>not_found`
    : ruleName(hit.index);
}

/** Per rule, over the decided lines given. */
export function ruleFigures(decided: readonly Decided[]): Map<string, RuleFigures> {
  const out = new Map<string, RuleFigures>();
  for (const d of decided) {
    const key = ruleKey(d);
    if (key === undefined) continue;
    const f = out.get(key) ?? { fires: 0, right: 0, servers: new Set(), wrongMutating: 0 };
    out.set(key, f);
    f.fires++;
    f.servers.add(d.line.server);
    if (d.predicted === d.line.label) f.right++;
    else if (
      d.line.effect === "mutating" &&
      (d.c.action === "retry_dependency" || d.c.action === "correct_arguments")
    )
      f.wrongMutating++;
  }
  return out;
}

/** The dangerous kinds `pnpm eval` counts (scripts/eval-corpus.ts), for one decided line. */
export function isDangerous(d: Decided): boolean {
  const { label, effect } = d.line;
  const mutating = effect === "mutating";
  return (
    (label === "stop" && d.predicted === "retry_dependency") ||
    (mutating && label === "stop" && d.predicted === "correct_arguments") ||
    (mutating && d.predicted === "retry_dependency" && label !== "retry_dependency")
  );
}

/** A set's run figures: unambiguous accuracy, dangerous decisions (all lines) by stage. */
export function setFigures(decided: readonly Decided[]) {
  const clear = decided.filter((d) => !d.line.ambiguous);
  const dangerous = decided.filter(isDangerous);
  const bySource: Record<string, number> = {};
  for (const d of dangerous) bySource[d.c.source] = (bySource[d.c.source] ?? 0) + 1;
  return {
    unambiguous: {
      correct: clear.filter((d) => d.predicted === d.line.label).length,
      total: clear.length,
    },
    dangerous: { total: dangerous.length, bySource },
  };
}

/**
 * The run's decision of a line had a rule's correction on a `mutating` tool been doubted at
 * `weight` (RULE_WRITE_STOP_WEIGHT in classify.ts; 0: never doubted, the table as written): a stop
 * where the shipped model finds a stop at least 1 / weight as likely as the correction.
 */
export function atWeight(d: Decided, weight: number): string {
  if (d.c.source !== "rule" || d.c.action !== "correct_arguments" || d.line.effect !== "mutating")
    return d.predicted;
  const reading = readText(d.line.text, SHIPPED_TEXT_MODEL);
  if (reading === undefined || weight === 0) return "correct_arguments";
  const correct = reading.probabilities[MODEL_CLASSES.indexOf("correct_arguments")] ?? 0;
  const stop = reading.probabilities[MODEL_CLASSES.indexOf("stop")] ?? 0;
  return stop * weight >= correct ? "stop" : "correct_arguments";
}

/** The weights the leave-one-set-out check chooses among. */
export const WEIGHTS = [0.5, 0.75, 1, 1.25, 1.5, 2, 3] as const;

/**
 * Leave one used blind set out: the weight is chosen on the corpus and the three other sets (most
 * right decisions on unambiguous lines less dangerous decisions on all lines), and the fourth is
 * scored with it, beside the table as written (weight 0).
 */
export function leaveOneSetOut(decided: readonly Decided[], held: readonly string[]) {
  const at = (ds: readonly Decided[], w: number) =>
    setFigures(ds.map((d) => ({ ...d, predicted: atWeight(d, w) })));
  return held.map((name) => {
    const train = decided.filter((d) => d.set !== name);
    let weight: number = WEIGHTS[0];
    let best = Number.NEGATIVE_INFINITY;
    for (const w of WEIGHTS) {
      const f = at(train, w);
      const score = f.unambiguous.correct - f.dangerous.total;
      if (score > best) {
        best = score;
        weight = w;
      }
    }
    const scored = decided.filter((d) => d.set === name);
    return { held: name, weight, before: at(scored, 0), after: at(scored, weight) };
  });
}

function readSet(name: string, files: readonly string[]): LabelledSet {
  return { name, lines: files.flatMap((f) => readCorpusLines(f) as Line[]) };
}

/** The sets this script may read: the corpus and the used blind sets, never test/blind5. */
export function tuningSets(root: string): { corpus: LabelledSet; used: LabelledSet[] } {
  return {
    corpus: readSet("corpus", [
      join(root, "test/corpus/tool-errors.jsonl"),
      join(root, "test/corpus/unseen-tool-errors.jsonl"),
    ]),
    used: ["blind", "blind2", "blind3", "blind4"].map((n) =>
      readSet(n, [join(root, "test", n, "tool-errors.jsonl")]),
    ),
  };
}

const pct = (r: number, f: number) => (f === 0 ? "-" : (r / f).toFixed(2));

function table(title: string, figures: Map<string, RuleFigures>, minFires: number): string[] {
  const rows = [...figures]
    .filter(([, f]) => f.fires >= minFires)
    .sort(([, a], [, b]) => a.right / a.fires - b.right / b.fires || b.fires - a.fires);
  return [
    title,
    `  ${"rule".padEnd(26)} fires right prec servers wrong-on-mutating`,
    ...rows.map(
      ([name, f]) =>
        `  ${name.padEnd(26)} ${String(f.fires).padStart(5)} ${String(f.right).padStart(5)} ${pct(f.right, f.fires).padStart(4)} ${String(f.servers.size).padStart(7)} ${String(f.wrongMutating).padStart(5)}`,
    ),
  ];
}

function main(): void {
  const args = process.argv.slice(2);
  const json = args.includes("--json");
  const minFires = Number(args.find((a) => a.startsWith("--min-fires="))?.slice(12) ?? 1);
  const { corpus, used } = tuningSets(resolve("."));
  const decided = decideAll([corpus, ...used]);
  const groups = {
    corpus: decided.filter((d) => d.set === "corpus"),
    blind1to4: decided.filter((d) => d.set !== "corpus"),
  };
  const report: Record<string, unknown> = {};
  const out: string[] = [];
  for (const [group, lines] of Object.entries(groups)) {
    for (const ambiguous of [false, true]) {
      const figures = ruleFigures(lines.filter((d) => d.line.ambiguous === ambiguous));
      const title = `${group}, ${ambiguous ? "ambiguous" : "non-ambiguous"} lines (precision = right / fires, the run's decision against the label)`;
      out.push(...table(title, figures, minFires), "");
      report[`${group}.${ambiguous ? "ambiguous" : "clear"}`] = Object.fromEntries(
        [...figures].map(([k, f]) => [
          k,
          {
            fires: f.fires,
            right: f.right,
            servers: f.servers.size,
            wrongMutating: f.wrongMutating,
          },
        ]),
      );
    }
  }
  out.push("Run figures per set (unambiguous accuracy; dangerous decisions, all lines, by stage):");
  const sets: Record<string, unknown> = {};
  for (const name of ["corpus", ...used.map((u) => u.name)]) {
    const f = setFigures(decided.filter((d) => d.set === name));
    sets[name] = f;
    out.push(
      `  ${name.padEnd(8)} ${f.unambiguous.correct}/${f.unambiguous.total} = ${pct(f.unambiguous.correct, f.unambiguous.total)}  dangerous ${f.dangerous.total} ${JSON.stringify(f.dangerous.bySource)}`,
    );
  }
  report.sets = sets;
  const loso = leaveOneSetOut(
    decided,
    used.map((u) => u.name),
  );
  out.push(
    "",
    "Leave one used blind set out: RULE_WRITE_STOP_WEIGHT chosen on the corpus + the three others, the fourth scored (before = the table as written, no doubt):",
  );
  for (const l of loso) {
    const fmt = (f: ReturnType<typeof setFigures>) =>
      `${f.unambiguous.correct}/${f.unambiguous.total} dangerous ${f.dangerous.total}`;
    out.push(
      `  ${l.held.padEnd(8)} weight ${l.weight}: before ${fmt(l.before)}, after ${fmt(l.after)}`,
    );
  }
  report.leaveOneSetOut = loso;
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : `${out.join("\n")}\n`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) main();
