/**
 * An experiment on the classifier's decision structure (issue 27): a learned decision over the
 * rule firings ("stack"), judged leave-one-source-out against the current pipeline.
 *
 * The current pipeline: policy, structured signals, the built-in text rules as verdicts, then the
 * learned text model where nothing else spoke (packages/core/src/judge/classify.ts). The stack
 * keeps hard, un-learned, what is not in doubt: the policy; protocol and transport failures
 * (JSON-RPC errors, local kinds: the host's, or an unknown tool the server itself names); the
 * server's own tool-failure metadata (`_meta` class / `retryable`); a request still in progress
 * (never a correction: the first attempt may still write); and the asymmetry of harm
 * (`stopsGuessedWrite` in decide.ts, through `decidedAction`). Everything else becomes features
 * of one multinomial logistic regression (scripts/text-model-training.ts, `trainOnFeatures`):
 * which built-in rule fired (`r:#index`, its action `ra:`, its reason `rr:`, or `r:none`), an
 * HTTP status in the tool's own body (`sig:` its reason, `sa:` its action: a 403 may be a scope to
 * grant or a path outside the roots, so the text weighs in), the tool's effect (`e:`), the crosses
 * rule action × effect and status action × effect (`x:`), and the text features of the learned
 * stage (`textFeatures`). The reading is taken as classify takes the text model's (`takeReading`,
 * the shipped bars, a retry the text says not to repeat stops), marked as the model's, so the one
 * mechanism of the asymmetry of harm applies to it.
 *
 * Variants:
 * - `stack`: every built-in rule is a feature;
 * - `narrow`: a rule stays a verdict when, on the fold's TRAINING lines, the current pipeline's
 *   decisions from it were right on at least 0.95 of at least 10 unambiguous lines; the others are
 *   features.
 *
 * Honest evaluation, leave one source out: the sources are the corpus's held-out folds (by
 * server, test/corpus/unseen-tool-errors.jsonl `fold`; the tuning lines, tool-errors.jsonl,
 * always train) and each blind set (test/blind … test/blind5) as one fold. For each held-out
 * fold every model is trained on the non-ambiguous lines of all other sources: the stack's, and
 * for the current pipeline a text model on the same lines (so that only the structure differs;
 * the shipped weight file's figure is printed beside it). Scored through `decidedAction` with
 * the line's effect, as `pnpm eval` scores a blind set: right on unambiguous lines, dangerous
 * over all lines (ambiguous included; the three kinds of scripts/eval-corpus.ts). Corpus folds
 * score every held-out line (`pnpm eval`'s learned-stage figure leaves out servers a test quotes).
 *
 * Pre-registered ship criterion (fixed before any figure was seen): a variant ships only if,
 * summed over all held-out folds, right-on-unambiguous ≥ current + 1 % of those lines AND
 * dangerous ≤ current, AND on the blind5 fold it is not worse on either count. Where both
 * variants meet it, the one with more right lines ships (then fewer dangerous). "Current" is the
 * current pipeline with its text model trained on the same lines.
 *
 * Result (session of 2026-12-06): not met by either variant. Summed over the held-out folds the
 * stack had 45 fewer right lines (1544 against 1589 of 1730) and 32 fewer dangerous decisions (25
 * against 57), fewer dangerous on every blind fold; `narrow` 1559 and 32.
 *
 * Second pre-registered comparison, written on 2026-12-06 before test/blind6 was in the
 * repository or scored: whether that trade carries over to servers nobody here has read. On
 * test/blind6, scored once with both arms (the stack, variant `stack`, shipped bars, trained on
 * the corpus and blind … blind5; the current pipeline with its text model trained on the same
 * lines; the shipped weights printed beside), the stack replaces the current structure only if
 * its dangerous decisions on blind6 are at most half the current's AND it loses at most 2
 * right-on-unambiguous lines for each dangerous decision it avoids (a dangerous decision can
 * repeat a write or loop on what only a person can fix; a lost right decision mostly ends a run
 * early or costs a call). Nothing about either arm changes between this paragraph and that
 * scoring.
 *
 * Its result (`--final=blind6`, scored once on 2026-12-06): current 195/223 right and 11 dangerous,
 * the stack 194/223 and 6 (shipped weights 193 and 11; `narrow` 194 and 9). The stack avoided 5
 * dangerous decisions for 1 right one, but 6 is not at most half of 11: NOT MET, the current
 * structure stays. Across the sets it has been scored on it trades the same way (blind5: 6 right
 * for 9 dangerous; blind6: 1 for 5; the development folds: 45 for 32).
 *
 * Third pre-registered comparison, written on 2026-12-06 before any test/blind7 exists, for the
 * next fresh set, scored once the same way (`--final=blind7`): the stack replaces the current
 * structure if it has fewer dangerous decisions than the current pipeline AND loses at most 2
 * right-on-unambiguous lines for each dangerous decision it avoids. The halving bar of the second
 * comparison is dropped: it asked for a size of effect that one set of ~10 dangerous lines cannot
 * show reliably; the exchange rate is what the product's promise is about. The arms do not change
 * before that scoring.
 *
 * Its result (`--final=blind7`, scored once on 2026-12-06, trained on the corpus and blind …
 * blind6): current 236/247 right and 8 dangerous, the stack 225/247 and 3 (shipped weights 235
 * and 8; `narrow` 230 and 2). The stack avoided 5 dangerous decisions for 11 right ones, more than
 * 2 each: NOT MET, the current structure stays. (`narrow`, 6 for 6, was not the arm registered.)
 * The trade across the three fresh sets: blind5 6 right for 9 dangerous, blind6 1 for 5, blind7 11
 * for 5.
 *
 * Development figure after the rules8 change (weak words yield and are not retried on a write;
 * more person-only classes; not a pre-registered comparison, and in-sample for the rules, which
 * were written after reading blind … blind6): default folds, current 1608/1730 right and 12
 * dangerous, the stack 1593 and 13, `narrow` 1588 and 13. The current structure stays.
 *
 * test/blind5 is read to be scored and only AGGREGATES leave: per fold totals, never a line, id
 * or server (test/blind/README.md).
 *
 * `--final=blind6` holds out that set alone (every arm trained on everything else) and prints its
 * aggregates and the second comparison's verdict as JSON. "Everything else" includes every blind
 * set collected before the one scored (`finalSources`): `--final=blind7` trains on blind6 too.
 * (Until 2026-12-06, before test/blind7 existed, the script added only the scored set, so a later
 * set would have been scored with blind6 left out of training; mended then, before any blind7.)
 *
 * Usage: node --conditions=source --import tsx scripts/eval-stack.ts [--json | --grid | --time |
 *   --final=<blind set> |
 *   --explain "<text>" [--effect=mutating|read_only|idempotent]]
 */

import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { type Failure, failureFromResult } from "@governor/core";
import { type Classification, classify } from "@governor/core/judge";
import {
  MODEL_BARS,
  MODEL_REASON,
  type ModelBars,
  takeReading,
} from "../packages/core/src/judge/classify.ts";
import {
  explainBuiltinMatch,
  isInProgressText,
  isNotRetryableText,
} from "../packages/core/src/judge/rules.ts";
import {
  MODEL_CLASSES,
  type ModelClass,
  type ModelReading,
  type TextModel,
  textFeatures,
} from "../packages/core/src/judge/text-model.ts";
import { BLIND_SETS } from "./blind-sets.ts";
import { decidedAction, lineToolPolicy } from "./eval-decided.ts";
import { type CorpusLine, readCorpusLines, trainingTexts } from "./text-model-corpus.ts";
import {
  type FeatureRow,
  type TrainingOptions,
  trainOnFeatures,
  trainTextModel,
} from "./text-model-training.ts";

/** A labelled line, as far as this script reads it. */
export interface Line extends CorpusLine {
  readonly tool?: string;
}

/** A held-out fold: a corpus fold or a blind set. */
export interface Fold {
  readonly name: string;
  readonly lines: readonly Line[];
}

/** A model that knows no feature: classify's rules and signals alone. */
const NO_MODEL: TextModel = { v: 1, trainedOn: "nothing", bias: [0, 0, 0, 0], weights: {} };

/** What the current pipeline (no text model) makes of a line, and what the stack reads of it. */
export interface FirstPass {
  readonly failure: Failure;
  readonly rulesOnly: Classification;
  /** The stack leaves this classification as it is (policy, protocol, transport, metadata, in progress). */
  readonly hard: boolean;
  /** The built-in rule that decided, by its index in BUILTIN_RULES. */
  readonly ruleIndex?: number;
  /** The stack's features (empty when hard). */
  readonly features: readonly string[];
}

/** An HTTP status read from the tool's own body, without the server's tool-failure metadata. */
function softSignal(failure: Failure, c: Classification): boolean {
  return (
    c.source === "signal" &&
    failure.channel === "tool" &&
    failure.httpStatus !== undefined &&
    failure.toolFailure?.class === undefined &&
    failure.toolFailure?.retryable === undefined
  );
}

/** Classifies a line without a text model, and reads the stack's features of it. */
export function firstPass(
  line: Line,
  failure: Failure = failureFromResult({
    content: [{ type: "text", text: line.text }],
    isError: true,
  }),
): FirstPass {
  const rulesOnly = classify(failure, lineToolPolicy(line), undefined, NO_MODEL);
  const text = failure.text;
  const soft = softSignal(failure, rulesOnly);
  const hard =
    rulesOnly.source === "policy" ||
    (rulesOnly.source === "signal" && !soft) ||
    (rulesOnly.source === "rule" && isInProgressText(text));
  if (hard) return { failure, rulesOnly, hard, features: [] };
  const effect = line.effect ?? "unknown";
  const features = [`e:${effect}`];
  const hit = explainBuiltinMatch(text);
  let ruleIndex: number | undefined;
  if (rulesOnly.source === "rule" && hit !== undefined) {
    ruleIndex = hit.index;
    features.push(
      `r:#${hit.index}`,
      `ra:${rulesOnly.action}`,
      `rr:${rulesOnly.reason}`,
      `x:${rulesOnly.action}|${effect}`,
    );
  } else if (soft) {
    features.push(
      `sig:${rulesOnly.reason}`,
      `sa:${rulesOnly.action}`,
      `x:sig ${rulesOnly.action}|${effect}`,
    );
    if (hit !== undefined) {
      features.push(
        `r:#${hit.index}`,
        `ra:${hit.rule.action}`,
        `rr:${hit.rule.reason}`,
        `x:${hit.rule.action}|${effect}`,
      );
    } else features.push("r:none", `x:none|${effect}`);
  } else {
    features.push("r:none", `x:none|${effect}`);
  }
  features.push(...textFeatures(text));
  return {
    failure,
    rulesOnly,
    hard,
    ...(ruleIndex !== undefined && { ruleIndex }),
    features: [...new Set(features)],
  };
}

/** A linear model's reading of a list of features (as readText reads a text's). */
export function readFeatures(
  features: readonly string[],
  model: TextModel,
): ModelReading | undefined {
  const known: { feature: string; w: readonly number[] }[] = [];
  for (const feature of features) {
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
  const shown = known
    .map(({ feature, w }) => ({ feature, weight: Math.round((w[best] as number) * 1000) / 1000 }))
    .sort((a, b) => Math.abs(b.weight) - Math.abs(a.weight) || (a.feature < b.feature ? -1 : 1))
    .slice(0, 5);
  return {
    action: MODEL_CLASSES[best] as ModelClass,
    probability: 1 / sum,
    probabilities: scores.map((s) => Math.exp(s - top) / sum),
    features: shown,
  };
}

/** A variant of the stack: which built-in rules stay verdicts (none for `stack`). */
export interface Variant {
  readonly name: string;
  readonly verdictRules: ReadonlySet<number>;
  readonly model: TextModel;
  /** The bars its reading must pass (takeReading); the shipped text model's unless given. */
  readonly bars?: ModelBars;
}

/** Whether the stack's model decides this line (not hard, not a rule kept as a verdict). */
function toModel(p: FirstPass, verdictRules: ReadonlySet<number>): boolean {
  return (
    !p.hard &&
    !(p.rulesOnly.source === "rule" && p.ruleIndex !== undefined && verdictRules.has(p.ruleIndex))
  );
}

/** The stack's classification of a line (as classify would return it, before `decide`). */
export function stackClassify(p: FirstPass, v: Variant): Classification {
  if (!toModel(p, v.verdictRules)) return p.rulesOnly;
  const reading = readFeatures(p.features, v.model);
  if (reading === undefined) {
    return {
      action: "correct_arguments",
      reason: "unclassified",
      certainty: p.rulesOnly.certainty,
      source: "default",
    };
  }
  const taken = takeReading(reading, v.bars);
  const action: ModelClass =
    taken.action === "retry_dependency" && isNotRetryableText(p.failure.text)
      ? "stop"
      : taken.action;
  return {
    action,
    reason: action === taken.action ? MODEL_REASON[action] : "retries_exhausted",
    certainty: p.rulesOnly.certainty,
    source: "model",
    model: {
      probability: Math.round(reading.probability * 1000) / 1000,
      unsure: taken.unsure,
      read: reading.action,
      features: reading.features,
      ...(taken.stopOnWrite && { stopOnWrite: true as const }),
    },
  };
}

/** Rules whose decisions were right on at least `precision` of at least `min` unambiguous lines. */
export function preciseRules(
  lines: readonly Line[],
  passes: ReadonlyMap<Line, FirstPass>,
  precision = 0.95,
  min = 10,
): Set<number> {
  const counts = new Map<number, { n: number; right: number }>();
  for (const line of lines) {
    if (line.ambiguous) continue;
    const p = passes.get(line) as FirstPass;
    if (p.hard || p.rulesOnly.source !== "rule" || p.ruleIndex === undefined) continue;
    const c = counts.get(p.ruleIndex) ?? { n: 0, right: 0 };
    c.n++;
    if (decidedAction(p.rulesOnly, line.effect) === line.label) c.right++;
    counts.set(p.ruleIndex, c);
  }
  return new Set(
    [...counts].filter(([, c]) => c.n >= min && c.right / c.n >= precision).map(([i]) => i),
  );
}

/** Trains the stack's model on the lines that reach it. */
export function trainStack(
  lines: readonly Line[],
  passes: ReadonlyMap<Line, FirstPass>,
  verdictRules: ReadonlySet<number>,
  trainedOn = "",
  options: Omit<TrainingOptions, "trainedOn"> = {},
  keepFeature: (feature: string) => boolean = () => true,
): TextModel {
  const rows: FeatureRow[] = [];
  for (const line of lines) {
    if (line.ambiguous) continue;
    const p = passes.get(line) as FirstPass;
    if (!toModel(p, verdictRules)) continue;
    rows.push({ server: line.server, features: p.features.filter(keepFeature), label: line.label });
  }
  return trainOnFeatures(rows, { ...options, trainedOn });
}

/** A fold's aggregate figures: nothing in it names a line. */
export interface Figures {
  right: number;
  unambiguous: number;
  dangerous: number;
  /** Unambiguous lines the stack's model decided (0 for the current pipeline's rows). */
  byModel: number;
}

function isDangerous(line: Line, predicted: string): boolean {
  const mutating = line.effect === "mutating";
  return (
    (line.label === "stop" && predicted === "retry_dependency") ||
    (mutating && line.label === "stop" && predicted === "correct_arguments") ||
    (mutating && predicted === "retry_dependency" && line.label !== "retry_dependency")
  );
}

/** Scores a fold's lines with a classifier; aggregates only. */
export function scoreFold(lines: readonly Line[], judge: (line: Line) => Classification): Figures {
  const f: Figures = { right: 0, unambiguous: 0, dangerous: 0, byModel: 0 };
  for (const line of lines) {
    const c = judge(line);
    const predicted = decidedAction(c, line.effect);
    if (isDangerous(line, predicted)) f.dangerous++;
    if (line.ambiguous) continue;
    f.unambiguous++;
    if (predicted === line.label) f.right++;
    if (c.source === "model") f.byModel++;
  }
  return f;
}

/** The sources: the corpus's tuning lines (always training) and the held-out folds. */
export function readSources(
  root: string,
  withBlind5 = true,
  extra: readonly string[] = [],
): { tuning: Line[]; folds: Fold[] } {
  const tuning = readCorpusLines(join(root, "test/corpus/tool-errors.jsonl")) as Line[];
  const heldOut = readCorpusLines(join(root, "test/corpus/unseen-tool-errors.jsonl")) as Line[];
  const corpusFolds = [...new Set(heldOut.map((l) => l.fold ?? 0))].sort((a, b) => a - b);
  const folds: Fold[] = corpusFolds.map((k) => ({
    name: `corpus fold ${k}`,
    lines: heldOut.filter((l) => (l.fold ?? 0) === k),
  }));
  for (const n of [
    "blind",
    "blind2",
    "blind3",
    "blind4",
    ...(withBlind5 ? ["blind5"] : []),
    ...extra,
  ]) {
    folds.push({
      name: n,
      lines: readCorpusLines(join(root, "test", n, "tool-errors.jsonl")) as Line[],
    });
  }
  return { tuning, folds };
}

export interface FoldReport {
  readonly fold: string;
  readonly current: Figures;
  readonly shipped: Figures;
  readonly stack: Figures;
  readonly narrow: Figures;
  readonly narrowVerdictRules: number;
}

/**
 * The sets added to the default folds when `final` is scored: every blind set collected after
 * blind5 up to and including `final`, so the arms train on every other set (for blind6 that is
 * blind6 alone; for blind7, blind6 trains and blind7 is held out). A name that is not a blind set
 * is passed through, and reported missing when read.
 */
export function finalSources(final: string): string[] {
  const at = (BLIND_SETS as readonly string[]).indexOf(final);
  if (at < 0) return [final];
  return BLIND_SETS.slice(BLIND_SETS.indexOf("blind5") + 1, at + 1);
}

/**
 * Every fold, held out in turn: the current pipeline and both variants trained without it. With
 * `final` (a blind set's name, e.g. `blind6`), that set is added as a source and only it is held
 * out: every arm trains on all the others.
 */
export function leaveOneSourceOut(root: string, final?: string): FoldReport[] {
  const { tuning, folds } = readSources(root, true, final === undefined ? [] : finalSources(final));
  const passes = new Map<Line, FirstPass>();
  for (const line of [...tuning, ...folds.flatMap((f) => f.lines)])
    passes.set(line, firstPass(line));
  const shippedJudge = (line: Line) =>
    classify((passes.get(line) as FirstPass).failure, lineToolPolicy(line));
  const heldOut = final === undefined ? folds : folds.filter((f) => f.name === final);
  return heldOut.map((fold) => {
    const train = [...tuning, ...folds.filter((f) => f !== fold).flatMap((f) => f.lines)];
    const textModel = trainTextModel(trainingTexts(train));
    const current = scoreFold(fold.lines, (line) =>
      classify((passes.get(line) as FirstPass).failure, lineToolPolicy(line), undefined, textModel),
    );
    const stackVariant: Variant = {
      name: "stack",
      verdictRules: new Set(),
      model: trainStack(train, passes, new Set()),
    };
    const verdictRules = preciseRules(train, passes);
    const narrowVariant: Variant = {
      name: "narrow",
      verdictRules,
      model: trainStack(train, passes, verdictRules),
    };
    return {
      fold: fold.name,
      current,
      shipped: scoreFold(fold.lines, shippedJudge),
      stack: scoreFold(fold.lines, (line) =>
        stackClassify(passes.get(line) as FirstPass, stackVariant),
      ),
      narrow: scoreFold(fold.lines, (line) =>
        stackClassify(passes.get(line) as FirstPass, narrowVariant),
      ),
      narrowVerdictRules: verdictRules.size,
    };
  });
}

type Arm = "current" | "shipped" | "stack" | "narrow";

function total(rows: readonly FoldReport[], arm: Arm): Figures {
  return rows.reduce(
    (s, r) => ({
      right: s.right + r[arm].right,
      unambiguous: s.unambiguous + r[arm].unambiguous,
      dangerous: s.dangerous + r[arm].dangerous,
      byModel: s.byModel + r[arm].byModel,
    }),
    { right: 0, unambiguous: 0, dangerous: 0, byModel: 0 },
  );
}

/** The pre-registered criterion (see the header), for one variant against the current pipeline. */
export function meetsCriterion(rows: readonly FoldReport[], arm: "stack" | "narrow") {
  const cur = total(rows, "current");
  const alt = total(rows, arm);
  const b5 = rows.find((r) => r.fold === "blind5");
  const more = alt.right >= cur.right + 0.01 * cur.unambiguous;
  const safer = alt.dangerous <= cur.dangerous;
  const blind5 =
    b5 !== undefined &&
    b5[arm].right >= b5.current.right &&
    b5[arm].dangerous <= b5.current.dangerous;
  return { more, safer, blind5, met: more && safer && blind5 };
}

/**
 * The pre-registered comparison on one fresh set (see the header). On blind6 (the second): the
 * stack at most halves the current pipeline's dangerous decisions and loses at most 2 right lines
 * for each dangerous decision it avoids. On a later set (the third): fewer dangerous decisions,
 * and at most 2 right lines lost for each one avoided.
 */
export function meetsFreshCriterion(row: FoldReport) {
  const avoided = row.current.dangerous - row.stack.dangerous;
  const lost = row.current.right - row.stack.right;
  const halves = 2 * row.stack.dangerous <= row.current.dangerous;
  const worth = lost <= 2 * avoided;
  // blind6 was judged by the second comparison, any later set by the third (see the header).
  const met = row.fold === "blind6" ? halves && worth : avoided > 0 && worth;
  return { avoided, lost, halves, worth, met };
}

/** A setting of the stack tried on the development folds (`--grid`). */
interface GridSetting {
  readonly name: string;
  readonly options: Omit<TrainingOptions, "trainedOn">;
  readonly keepFeature: (feature: string) => boolean;
}

const GRID_SETTINGS: readonly GridSetting[] = [
  { name: "as trained", options: {}, keepFeature: () => true },
  {
    name: "no text features",
    options: {},
    keepFeature: (f) => !/^[wbsc]:/.test(f) || f.startsWith("sig:") || f.startsWith("sa:"),
  },
  { name: "l2 0.001, 600 its", options: { l2: 0.001, iterations: 600 }, keepFeature: () => true },
  { name: "l2 0.02", options: { l2: 0.02 }, keepFeature: () => true },
  {
    name: "1 server, keep 2000",
    options: { minServers: 1, keep: 2000 },
    keepFeature: () => true,
  },
];

const GRID_BARS: readonly ModelBars[] = [0.5, 0.7, 0.85].map((retryAt) => ({
  ...MODEL_BARS,
  retryAt,
}));

/**
 * `--grid`: other bars of the stack's reading and other training settings, leave one source out
 * over the development folds only (the corpus folds and blind … blind4; blind5 is neither read
 * nor scored), summed: what the structure could reach if it were tuned, without tuning on the
 * fold that decides.
 */
function grid(root: string): string[] {
  const { tuning, folds } = readSources(root, false);
  const passes = new Map<Line, FirstPass>();
  for (const line of [...tuning, ...folds.flatMap((f) => f.lines)])
    passes.set(line, firstPass(line));
  const sums = new Map<string, Figures>();
  const add = (key: string, f: Figures) => {
    const s = sums.get(key) ?? { right: 0, unambiguous: 0, dangerous: 0, byModel: 0 };
    sums.set(key, {
      right: s.right + f.right,
      unambiguous: s.unambiguous + f.unambiguous,
      dangerous: s.dangerous + f.dangerous,
      byModel: s.byModel + f.byModel,
    });
  };
  for (const fold of folds) {
    const train = [...tuning, ...folds.filter((f) => f !== fold).flatMap((f) => f.lines)];
    const textModel = trainTextModel(trainingTexts(train));
    add(
      "current",
      scoreFold(fold.lines, (line) =>
        classify(
          (passes.get(line) as FirstPass).failure,
          lineToolPolicy(line),
          undefined,
          textModel,
        ),
      ),
    );
    const verdictRules = preciseRules(train, passes);
    for (const setting of GRID_SETTINGS) {
      for (const [name, rules] of [
        ["stack", new Set<number>()],
        ["narrow", verdictRules],
      ] as const) {
        const model = trainStack(train, passes, rules, "", setting.options, setting.keepFeature);
        for (const bars of GRID_BARS) {
          add(
            `${name}, ${setting.name}, retryAt ${bars.retryAt}`,
            scoreFold(fold.lines, (line) => {
              const p = passes.get(line) as FirstPass;
              return stackClassify(
                { ...p, features: p.features.filter(setting.keepFeature) },
                { name, verdictRules: rules, model, bars },
              );
            }),
          );
        }
      }
    }
  }
  return [
    `Development folds only (${folds.map((f) => f.name).join(", ")}; blind5 not read), leave one source out, summed: right/unambiguous, dangerous.`,
    ...[...sums].map(
      ([k, f]) =>
        `  ${k.padEnd(68)} ${`${f.right}/${f.unambiguous}`.padStart(9)} ${String(f.dangerous).padStart(3)}`,
    ),
  ];
}

/** The stack as it would ship: the pre-registered design, trained on the corpus and blind … blind4. */
function shippableStack(root: string): { variant: Variant; passes: Map<Line, FirstPass> } {
  const { tuning, folds } = readSources(root, false);
  const train = [...tuning, ...folds.flatMap((f) => f.lines)];
  const passes = new Map<Line, FirstPass>(train.map((l) => [l, firstPass(l)]));
  const model = trainStack(train, passes, new Set(), "test/corpus + test/blind … test/blind4");
  return { variant: { name: "stack", verdictRules: new Set(), model }, passes };
}

/** `--explain <text> [--effect=mutating|read_only|idempotent]`: what the stack reads in a text. */
function explainText(root: string, text: string, effect: Line["effect"]): string[] {
  const { variant } = shippableStack(root);
  const line: Line = {
    id: "explain",
    server: "explain",
    text,
    label: "correct_arguments",
    ambiguous: false,
    ...(effect !== undefined && { effect }),
  };
  const p = firstPass(line);
  const c = stackClassify(p, variant);
  const reading = p.hard ? undefined : readFeatures(p.features, variant.model);
  const out = [
    `current (rules, no model): ${p.rulesOnly.action} (${p.rulesOnly.reason}, ${p.ruleIndex === undefined ? p.rulesOnly.source : `rule #${p.ruleIndex}`})`,
    `stack: ${c.action} (${c.reason}, ${c.source}); as the run decides it on a ${effect ?? "undeclared"} tool: ${decidedAction(c, effect)}`,
  ];
  if (reading !== undefined) {
    const probabilities = MODEL_CLASSES.map(
      (k, i) => `${k} ${(reading.probabilities[i] as number).toFixed(3)}`,
    ).join(", ");
    out.push(
      `  read ${reading.action} at ${reading.probability.toFixed(3)} (${probabilities})${c.model?.stopOnWrite ? "; a guessed correction: stops on a mutating tool" : ""}`,
      `  features that weighed most for ${reading.action}: ${reading.features.map((f) => `${f.feature} ${f.weight}`).join(", ")}`,
    );
  } else if (p.hard) out.push("  hard: the stack does not read it (policy, signal or in progress)");
  return out;
}

/**
 * `--time`: microseconds per text, the current classify (shipped weights) against the stack as
 * this script runs it (classify without a model, the rule that fired, the features, the reading),
 * over the corpus and blind … blind4 texts (failures made once, outside the timing), interleaved
 * rounds in one process. The script's stack scans the rules
 * twice (classify, then explainBuiltinMatch for the rule's index); one scan would do in core.
 */
function timing(root: string): string[] {
  const { variant, passes } = shippableStack(root);
  const lines = [...passes.keys()];
  const failures = lines.map((l) => (passes.get(l) as FirstPass).failure);
  const policies = lines.map((l) => lineToolPolicy(l));
  const runCurrent = () => {
    for (let i = 0; i < lines.length; i++)
      classify(failures[i] as Failure, policies[i] as ReturnType<typeof lineToolPolicy>);
  };
  const runStack = () => {
    for (let i = 0; i < lines.length; i++)
      stackClassify(firstPass(lines[i] as Line, failures[i] as Failure), variant);
  };
  const runModelOnly = () => {
    for (const line of lines) {
      const p = passes.get(line) as FirstPass;
      if (!p.hard) readFeatures(p.features, variant.model);
    }
  };
  const arms = [
    ["current classify (shipped weights)", runCurrent],
    ["stack: first pass + reading", runStack],
    ["stack: the reading alone (features given)", runModelOnly],
  ] as const;
  const ns = arms.map(() => 0n);
  for (let round = 0; round < 7; round++) {
    arms.forEach(([, run], i) => {
      const t0 = process.hrtime.bigint();
      run();
      if (round > 1) ns[i] = (ns[i] as bigint) + (process.hrtime.bigint() - t0);
    });
  }
  return arms.map(
    ([name], i) =>
      `  ${name.padEnd(44)} ${(Number(ns[i]) / 5 / lines.length / 1000).toFixed(1)} µs per text (${lines.length} texts, 5 timed rounds)`,
  );
}

function main(): void {
  const json = process.argv.includes("--json");
  const explainAt = process.argv.indexOf("--explain");
  if (explainAt >= 0) {
    const text = process.argv[explainAt + 1];
    if (text === undefined) throw new Error('--explain needs a text: --explain "<error text>"');
    const effect = process.argv.find((a) => a.startsWith("--effect="))?.slice("--effect=".length);
    if (effect !== undefined && !["read_only", "idempotent", "mutating"].includes(effect))
      throw new Error(`--effect=${effect}: expected read_only, idempotent or mutating`);
    process.stdout.write(
      `${explainText(resolve("."), text, effect as Line["effect"]).join("\n")}\n`,
    );
    return;
  }
  if (process.argv.includes("--time")) {
    process.stdout.write(`${timing(resolve(".")).join("\n")}\n`);
    return;
  }
  if (process.argv.includes("--grid")) {
    process.stdout.write(`${grid(resolve(".")).join("\n")}\n`);
    return;
  }
  const final = process.argv.find((a) => a.startsWith("--final="))?.slice("--final=".length);
  if (final !== undefined) {
    const [row] = leaveOneSourceOut(resolve("."), final);
    if (row === undefined) throw new Error(`--final=${final}: no such blind set under test/`);
    process.stdout.write(
      `${JSON.stringify({ fold: row, criterion: meetsFreshCriterion(row) }, null, 2)}\n`,
    );
    return;
  }
  const rows = leaveOneSourceOut(resolve("."));
  const verdicts = {
    stack: meetsCriterion(rows, "stack"),
    narrow: meetsCriterion(rows, "narrow"),
  };
  if (json) {
    const arms = ["current", "shipped", "stack", "narrow"] as const;
    const totals = Object.fromEntries(arms.map((a) => [a, total(rows, a)]));
    process.stdout.write(
      `${JSON.stringify({ folds: rows, totals, criterion: verdicts }, null, 2)}\n`,
    );
    return;
  }
  const cell = (f: Figures) =>
    `${`${f.right}/${f.unambiguous}`.padStart(9)} ${String(f.dangerous).padStart(3)}`;
  const out = [
    "Leave one source out (right/unambiguous, dangerous over all lines). current = rules + a text model trained on the same lines; shipped = rules + the shipped weight file (in-sample on the corpus folds); stack = every rule a feature; narrow = rules right on >= 0.95 of >= 10 training lines stay verdicts (how many in brackets); (m) = unambiguous lines the stack's model decided.",
    `${"fold".padEnd(14)} ${"current".padStart(13)} ${"shipped".padStart(13)} ${"stack".padStart(13)} (m) ${"narrow".padStart(13)} (m)`,
  ];
  for (const r of [...rows, { ...rows[0], fold: "TOTAL" } as FoldReport]) {
    const get = (a: Arm) => (r.fold === "TOTAL" ? total(rows, a) : r[a]);
    out.push(
      `${r.fold.padEnd(14)} ${cell(get("current"))} ${cell(get("shipped"))} ${cell(get("stack"))} ${String(get("stack").byModel).padStart(3)} ${cell(get("narrow"))} ${String(get("narrow").byModel).padStart(3)}${r.fold === "TOTAL" ? "" : ` [${r.narrowVerdictRules}]`}`,
    );
  }
  for (const arm of ["stack", "narrow"] as const) {
    const v = verdicts[arm];
    out.push(
      `criterion, ${arm}: right >= current + 1% ${v.more ? "yes" : "no"}; dangerous <= current ${v.safer ? "yes" : "no"}; blind5 not worse ${v.blind5 ? "yes" : "no"} => ${v.met ? "MET" : "not met"}`,
    );
  }
  process.stdout.write(`${out.join("\n")}\n`);
}

// Run as a script, not when a test imports it.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href)
  main();
