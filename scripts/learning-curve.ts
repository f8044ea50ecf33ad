/**
 * Does the learned last stage carry over when it learns from more servers? (issue 27.) The used
 * blind sets (test/blind to test/blind4: their aggregates were watched by rule writers, so they
 * are no longer held out) become training data for the text model, one after the other, and each
 * model is scored on the freshest blind set (test/blind5) through the path `pnpm eval` scores a
 * blind set with: `classify` with the candidate model injected (as scripts/eval-learned-stage.ts
 * injects a per-fold model), the tool's effect as the line declares it, and the run's decision
 * (scripts/eval-decided.ts). Only the model changes: same trainer, features and options
 * (scripts/text-model-training.ts), same rules, and the shipped weight file is neither read for
 * training nor written.
 *
 * Printed, per training set (texts, servers): the target set's accuracy on its unambiguous lines,
 * its dangerous decisions by kind (ambiguous lines included, as `pnpm eval` counts them), and what
 * the learned stage decided there (decided / right / right for the run's default). Then:
 * - a variant training on the ambiguous lines too, the corpus's and the used sets' (the trainer
 *   has no per-text weight, only one per server: they weigh as much as the others);
 * - a variant where a sure reading of the model overrides a built-in text rule (the model's
 *   probability at or above a bar; any rule, or only rules that read a correction), the rest of
 *   classify unchanged;
 * - leave one used blind set out: corpus + three of them train (without and with their ambiguous
 *   lines, and with the override), the fourth is scored, beside the corpus-only model on the same
 *   set, so the gain is not one number.
 * Beside the pipeline's figure, the model alone (its likeliest class on every unambiguous line,
 * rules aside), the lines each stage decided and got wrong, and on the lines a rule decided how
 * often the model alone is right where the rule is wrong and the reverse: what the model learns,
 * and how much of it the rules let through.
 *
 * The target set is scored as AGGREGATES ONLY: no id, server, text or label of one of its lines is
 * printed or returned (test/blind/README.md). The used sets' figures are not held out from rule
 * work (their aggregates shaped rules), so read the leave-one-out gain, not its level.
 *
 * Usage: node --conditions=source --import tsx scripts/learning-curve.ts [--json] [--target=<dir>] [--no-loso]
 *   (defaults: corpus test/corpus, used sets test/blind..test/blind4, target test/blind5)
 */

import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { failureFromResult } from "@governor/core";
import { type Classification, classify } from "@governor/core/judge";
import { MODEL_REASON, takeReading } from "../packages/core/src/judge/classify.ts";
import { isNotRetryableText } from "../packages/core/src/judge/rules.ts";
import {
  type ModelClass,
  readText,
  SHIPPED_TEXT_MODEL,
  type TextModel,
} from "../packages/core/src/judge/text-model.ts";
import { decidedAction, lineToolPolicy } from "./eval-decided.ts";
import { type CorpusLine, readCorpusLines, trainingTexts } from "./text-model-corpus.ts";
import { type TrainingText, trainTextModel } from "./text-model-training.ts";

/** A labelled line of the corpus or a blind set, as far as this script reads it. */
export interface Line extends CorpusLine {
  readonly tool?: string;
}

/** A set's lines, and the name it is reported under. */
export interface LabelledSet {
  readonly name: string;
  readonly lines: readonly Line[];
}

/** When a sure reading of the model overrides a built-in text rule (variant 3). */
export interface Override {
  /** The model's probability of its class must be at least this. */
  readonly sureAt: number;
  /** `any`: every built-in rule; `corrections`: only a rule that reads a correction. */
  readonly rules: "any" | "corrections";
}

/** A set's aggregate figures: nothing in it names a line. */
export interface SetFigures {
  readonly unambiguous: { readonly correct: number; readonly total: number };
  readonly dangerous: {
    readonly total: number;
    readonly personOnlyRetried: number;
    readonly mutatingStopAsArguments: number;
    readonly mutatingWriteRetried: number;
  };
  /** Over the unambiguous lines the model decided (its own stage, or an override). */
  readonly learned: {
    readonly decided: number;
    readonly right: number;
    /** Right for the old default, a correction (the figure the issue quotes). */
    readonly defaultRight: number;
    /** Right for the run's default: a correction, a stop on a mutating tool. */
    readonly runDefaultRight: number;
    /** Of them, how many overrode a rule (0 without an override). */
    readonly overrides: number;
  };
  /**
   * The model alone on every unambiguous line, rules aside: its likeliest class is the label (a
   * text it knows no word of counts as wrong), as scripts/eval-learned-stage.ts counts it.
   */
  readonly modelAlone: number;
  /** The unambiguous lines each stage of classify decided, and how many of them it got wrong. */
  readonly missesBySource: Readonly<Record<string, { lines: number; wrong: number }>>;
  /**
   * On the unambiguous lines a built-in rule decided: the model alone right where the rule is
   * wrong, and wrong where the rule is right (what any override of the rules could gain or lose).
   */
  readonly ruleLines: {
    readonly modelRightRuleWrong: number;
    readonly modelWrongRuleRight: number;
  };
}

/**
 * Variant 3: where a built-in text rule decided and the model reads another class at or above the
 * bar, the model's reading is taken as classify takes it (takeReading, the shipped bars; a retry
 * the text says not to repeat stops), marked as the model's so that the run's asymmetry of harm
 * applies to it as to any reading of the model.
 */
function overridden(c: Classification, text: string, model: TextModel, o: Override) {
  if (c.source !== "rule") return c;
  if (o.rules === "corrections" && c.action !== "correct_arguments") return c;
  const reading = readText(text, model);
  if (reading === undefined || reading.probability < o.sureAt) return c;
  const taken = takeReading(reading);
  if (taken.action === c.action) return c;
  const action: ModelClass =
    taken.action === "retry_dependency" && isNotRetryableText(text) ? "stop" : taken.action;
  const over: Classification = {
    action,
    reason: MODEL_REASON[action],
    certainty: c.certainty,
    source: "model",
    model: {
      probability: reading.probability,
      unsure: taken.unsure,
      read: reading.action,
      features: reading.features,
      ...(taken.stopOnWrite && { stopOnWrite: true as const }),
    },
  };
  return over;
}

/** Scores a set with `model` injected, as `pnpm eval` scores a blind set; aggregates only. */
export function scoreSet(
  lines: readonly Line[],
  model: TextModel,
  override?: Override,
): SetFigures {
  let correct = 0;
  let total = 0;
  let personOnlyRetried = 0;
  let mutatingStopAsArguments = 0;
  let mutatingWriteRetried = 0;
  let dangerous = 0;
  let decided = 0;
  let right = 0;
  let defaultRight = 0;
  let runDefaultRight = 0;
  let overrides = 0;
  let modelAlone = 0;
  const bySource: Record<string, { lines: number; wrong: number }> = {};
  let modelRightRuleWrong = 0;
  let modelWrongRuleRight = 0;
  for (const line of lines) {
    const failure = failureFromResult({
      content: [{ type: "text", text: line.text }],
      isError: true,
    });
    const first = classify(failure, lineToolPolicy(line), undefined, model);
    const c = override === undefined ? first : overridden(first, failure.text, model, override);
    const predicted = decidedAction(c, line.effect);
    const mutating = line.effect === "mutating";
    const kinds = [
      line.label === "stop" && predicted === "retry_dependency",
      mutating && line.label === "stop" && predicted === "correct_arguments",
      mutating && predicted === "retry_dependency" && line.label !== "retry_dependency",
    ];
    if (kinds[0]) personOnlyRetried++;
    if (kinds[1]) mutatingStopAsArguments++;
    if (kinds[2]) mutatingWriteRetried++;
    if (kinds.some(Boolean)) dangerous++;
    if (line.ambiguous) continue;
    total++;
    if (predicted === line.label) correct++;
    const alone = readText(failure.text, model)?.action === line.label;
    if (alone) modelAlone++;
    const source = bySource[first.source] ?? { lines: 0, wrong: 0 };
    bySource[first.source] = source;
    source.lines++;
    if (predicted !== line.label) source.wrong++;
    if (first.source === "rule") {
      const ruleRight = decidedAction(first, line.effect) === line.label;
      if (alone && !ruleRight) modelRightRuleWrong++;
      if (!alone && ruleRight) modelWrongRuleRight++;
    }
    if (c.source === "model") {
      decided++;
      if (predicted === line.label) right++;
      if (line.label === "correct_arguments") defaultRight++;
      if (line.label === (mutating ? "stop" : "correct_arguments")) runDefaultRight++;
      if (c !== first) overrides++;
    }
  }
  return {
    unambiguous: { correct, total },
    dangerous: {
      total: dangerous,
      personOnlyRetried,
      mutatingStopAsArguments,
      mutatingWriteRetried,
    },
    learned: { decided, right, defaultRight, runDefaultRight, overrides },
    modelAlone,
    missesBySource: Object.fromEntries(
      Object.entries(bySource).sort(([a], [b]) => a.localeCompare(b)),
    ),
    ruleLines: { modelRightRuleWrong, modelWrongRuleRight },
  };
}

/** The texts a model trains on: non-ambiguous lines, or every line with `ambiguous`. */
export function textsOf(sets: readonly LabelledSet[], ambiguous = false): TrainingText[] {
  const lines = sets.flatMap((s) => s.lines);
  return ambiguous
    ? lines.map(({ server, text, label }) => ({ server, text, label }))
    : trainingTexts(lines);
}

function readSet(name: string, files: readonly string[]): LabelledSet {
  return { name, lines: files.flatMap((f) => readCorpusLines(f) as Line[]) };
}

const OVERRIDES: readonly Override[] = [
  { sureAt: 0.9, rules: "corrections" },
  { sureAt: 0.97, rules: "corrections" },
  { sureAt: 0.9, rules: "any" },
  { sureAt: 0.97, rules: "any" },
];

const pct = (c: number, t: number) => `${c}/${t} = ${(t === 0 ? 0 : c / t).toFixed(3)}`;

function row(label: string, texts: readonly TrainingText[] | undefined, f: SetFigures): string {
  const size =
    texts === undefined
      ? "".padEnd(20)
      : `${String(texts.length).padStart(5)} texts ${String(new Set(texts.map((t) => t.server)).size).padStart(3)} srv`.padEnd(
          20,
        );
  const d = f.dangerous;
  const l = f.learned;
  return `  ${label.padEnd(34)} ${size} ${pct(f.unambiguous.correct, f.unambiguous.total).padEnd(17)} dangerous ${String(d.total).padStart(2)} (stop retried ${d.personOnlyRetried}, mut stop->args ${d.mutatingStopAsArguments}, mut write retried ${d.mutatingWriteRetried})  alone ${pct(f.modelAlone, f.unambiguous.total)}  learned ${l.decided}/${l.right}/${l.defaultRight}/${l.runDefaultRight}${l.overrides > 0 ? ` (${l.overrides} overrides)` : ""}`;
}

function main(): void {
  const args = process.argv.slice(2);
  const json = args.includes("--json");
  const root = resolve(".");
  const targetDir = resolve(
    args.find((a) => a.startsWith("--target="))?.slice("--target=".length) ??
      join(root, "test/blind5"),
  );
  const corpus = readSet("corpus", [
    join(root, "test/corpus/tool-errors.jsonl"),
    join(root, "test/corpus/unseen-tool-errors.jsonl"),
  ]);
  const used = ["blind", "blind2", "blind3", "blind4"].map((n) =>
    readSet(n, [join(root, "test", n, "tool-errors.jsonl")]),
  );
  // Read here and scored only: nothing of a target line leaves scoreSet but counts.
  const target = readCorpusLines(join(targetDir, "tool-errors.jsonl")) as Line[];
  const out: string[] = [];
  const report: Record<string, unknown> = { target: { lines: target.length } };
  const shipped = scoreSet(target, SHIPPED_TEXT_MODEL);
  out.push(
    `Target ${targetDir.slice(root.length + 1)} (${target.length} lines; aggregates only). Columns: training texts, servers; unambiguous accuracy; dangerous (all lines); model alone (rules aside); learned stage decided/right/right-for-the-old-default (correction)/right-for-the-run's-default (a stop on a mutating tool).`,
    row("shipped weight file", undefined, shipped),
  );
  report.shipped = shipped;

  // 1, 2: the curve: corpus, then each used blind set added in turn.
  const curve: { name: string; texts: number; servers: number; figures: SetFigures }[] = [];
  const models = new Map<string, TextModel>();
  for (let n = 0; n <= used.length; n++) {
    const sets = [corpus, ...used.slice(0, n)];
    const name = sets.map((s) => s.name).join("+");
    const texts = textsOf(sets);
    const model = trainTextModel(texts);
    models.set(name, model);
    if (n === 0) {
      // As JSON, as the file is written (scripts/train-text-model.ts): -0 is written 0.
      const same =
        JSON.stringify({ bias: model.bias, weights: model.weights }) ===
        JSON.stringify({ bias: SHIPPED_TEXT_MODEL.bias, weights: SHIPPED_TEXT_MODEL.weights });
      out.push(`  (the corpus-only model ${same ? "is" : "is NOT"} the shipped weight file)`);
      report.corpusModelIsShipped = same;
    }
    const figures = scoreSet(target, model);
    curve.push({
      name,
      texts: texts.length,
      servers: new Set(texts.map((t) => t.server)).size,
      figures,
    });
    out.push(row(name, texts, figures));
  }
  report.curve = curve;
  const full = curve[curve.length - 1] as (typeof curve)[number];
  for (const [name, f] of [
    ["shipped", shipped],
    ["corpus + 4 blind", full.figures],
  ] as const) {
    const by = Object.entries(f.missesBySource)
      .map(([k, v]) => `${k} ${v.wrong}/${v.lines}`)
      .join(", ");
    out.push(
      `    ${name}: wrong/decided by stage (unambiguous): ${by}; on rule lines the model alone is right where the rule is wrong ${f.ruleLines.modelRightRuleWrong}, wrong where it is right ${f.ruleLines.modelWrongRuleRight}`,
    );
  }

  // The ambiguous lines too, at the weight of the others (the trainer weighs servers, not texts).
  const all = [corpus, ...used];
  const withAmbiguous = textsOf(all, true);
  const ambiguousModel = trainTextModel(withAmbiguous);
  const ambiguous = scoreSet(target, ambiguousModel);
  out.push(row("all four + ambiguous lines", withAmbiguous, ambiguous));
  report.withAmbiguous = {
    texts: withAmbiguous.length,
    servers: new Set(withAmbiguous.map((t) => t.server)).size,
    figures: ambiguous,
  };

  // 3: a sure reading of the model overrides a built-in rule.
  out.push("", "Variant: a sure model reading overrides a built-in text rule (target set):");
  const overrideRows: Record<string, unknown>[] = [];
  const fullName = all.map((s) => s.name).join("+");
  for (const name of ["corpus", fullName]) {
    for (const o of OVERRIDES) {
      const f = scoreSet(target, models.get(name) as TextModel, o);
      const label = `${name === "corpus" ? "corpus" : "corpus+4 blind"} p>=${o.sureAt} ${o.rules}`;
      out.push(row(label, undefined, f));
      overrideRows.push({ training: name, ...o, figures: f });
    }
  }
  report.override = overrideRows;

  // 4: leave one used set out: corpus + the three others train, the one left out is scored.
  if (!args.includes("--no-loso")) {
    out.push(
      "",
      "Leave one used blind set out (scored set: corpus-only model -> corpus + the other three; not held out from rule work):",
    );
    const loso: Record<string, unknown>[] = [];
    for (const left of used) {
      const others = used.filter((s) => s !== left);
      const texts = textsOf([corpus, ...others]);
      const model = trainTextModel(texts);
      const base = scoreSet(left.lines, models.get("corpus") as TextModel);
      const more = scoreSet(left.lines, model);
      const withAmbiguous = textsOf([corpus, ...others], true);
      const ambiguous = scoreSet(left.lines, trainTextModel(withAmbiguous));
      const overrides = OVERRIDES.map((o) => ({ o, f: scoreSet(left.lines, model, o) }));
      out.push(
        row(`${left.name}: corpus only`, textsOf([corpus]), base),
        row(`${left.name}: corpus + other three`, texts, more),
        row(`${left.name}:  + ambiguous lines`, withAmbiguous, ambiguous),
        ...overrides.map(({ o, f }) =>
          row(`${left.name}:  + override p>=${o.sureAt} ${o.rules}`, undefined, f),
        ),
      );
      loso.push({
        left: left.name,
        texts: texts.length,
        corpusOnly: base,
        withOthers: more,
        withAmbiguous: ambiguous,
        override: overrides.map(({ o, f }) => ({ ...o, figures: f })),
      });
    }
    report.leaveOneOut = loso;
  }
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : `${out.join("\n")}\n`);
}

// Run as a script, not when a test imports its scoring.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  main();
