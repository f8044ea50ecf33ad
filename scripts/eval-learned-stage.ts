/**
 * The learned last stage's honest figure (issue 27.2), for `pnpm eval`: per fold of held-out
 * servers, a text model trained WITHOUT that fold's servers (tuning servers + the other folds)
 * judges the fold's texts behind the rules, as `classify` runs it. Reported pooled and per fold,
 * with how many decisions came from the model and how many of those were right, and the model
 * alone (every text of the fold, rules aside). The shipped weights are trained on every fold, so
 * they are never scored on the corpus.
 */
import { join } from "node:path";
import { failureFromResult, loadPolicy } from "@governor/core";
import { classify, resolveToolPolicy } from "@governor/core/judge";
import { readText, type TextModel } from "../packages/core/src/judge/text-model.ts";
import { decidedAction } from "./eval-decided.ts";
import { type CorpusLine, readCorpusLines, trainingTexts } from "./text-model-corpus.ts";
import { trainTextModel } from "./text-model-training.ts";

const POLICY = loadPolicy({});

/** One fold of held-out servers: its lines and a model trained without its servers. */
export interface FoldModel {
  readonly fold: number;
  readonly inFold: readonly CorpusLine[];
  readonly model: TextModel;
}

/**
 * Per fold of held-out servers, in fold order: the fold's lines and a text model trained without
 * the fold's servers (the tuning servers and the other folds). The one split of the learned
 * stage's figures (this report and scripts/learned-stage-bars.ts).
 */
export function leaveFoldOut(
  tuning: readonly CorpusLine[],
  heldOut: readonly CorpusLine[],
): FoldModel[] {
  const folds = [...new Set(heldOut.map((l) => l.fold ?? 0))].sort((a, b) => a - b);
  return folds.map((fold) => {
    const inFold = heldOut.filter((l) => (l.fold ?? 0) === fold);
    const servers = new Set(inFold.map((l) => l.server));
    const model = trainTextModel(
      trainingTexts([...tuning, ...heldOut.filter((l) => !servers.has(l.server))]),
    );
    return { fold, inFold, model };
  });
}

interface FoldFigure {
  readonly fold: number;
  readonly servers: number;
  readonly correct: number;
  readonly total: number;
  readonly fromModel: number;
  readonly fromModelRight: number;
  /** Of the decisions from the model, how many the old default (a correction) had right. */
  readonly defaultWouldBeRight: number;
  /**
   * Of the decisions from the model, how many the run's default had right: a correction, which
   * the run stops on a `mutating` tool (the figure the model must beat).
   */
  readonly runDefaultWouldBeRight: number;
  readonly modelAloneCorrect: number;
  readonly personOnlyRetried: number;
}

export interface LearnedStageReport {
  readonly method: string;
  readonly pooled: { correct: number; total: number; accuracy: number };
  readonly folds: readonly FoldFigure[];
  readonly fromModel: number;
  readonly fromModelRight: number;
  readonly defaultWouldBeRight: number;
  readonly runDefaultWouldBeRight: number;
  readonly modelAlone: { correct: number; total: number; accuracy: number };
  readonly personOnlyRetried: number;
  readonly misclassified: readonly {
    id: string;
    label: string;
    predicted: string;
    source: string;
  }[];
}

const METHOD =
  "per fold of held-out servers, a model trained without that fold's servers judges the fold's " +
  "non-ambiguous texts behind the rules (rules first, model where no rule speaks); model alone = " +
  "the same fold models on every non-ambiguous text of their fold";

function judge(line: CorpusLine, model: TextModel) {
  const failure = failureFromResult({
    content: [{ type: "text", text: line.text }],
    isError: true,
  });
  // As `governor classify` judges a text line: no call facts, the failure alone; scored as the
  // run decides it (a guessed correction of a mutating tool stops: eval-decided.ts).
  const c = classify(
    failure,
    resolveToolPolicy(POLICY, (line as { tool?: string }).tool ?? "tool"),
    undefined,
    model,
  );
  return { ...c, action: decidedAction(c, line.effect) };
}

const ratio = (c: number, t: number) => ({ correct: c, total: t, accuracy: t === 0 ? 0 : c / t });

/**
 * Scores the learned stage fold by fold on the corpus in `dir`. Servers in `excluded` (those a
 * test or the rule table quotes, as the headline leaves out) are not scored; they may still train
 * the models of the other folds.
 */
export function learnedStageReport(
  dir: string,
  excluded: ReadonlySet<string> = new Set(),
): LearnedStageReport {
  const tuning = readCorpusLines(join(dir, "tool-errors.jsonl"));
  const heldOut = readCorpusLines(join(dir, "unseen-tool-errors.jsonl"));
  const figures: FoldFigure[] = [];
  const misclassified: LearnedStageReport["misclassified"][number][] = [];
  for (const { fold, inFold, model } of leaveFoldOut(tuning, heldOut)) {
    const clear = inFold.filter((l) => !l.ambiguous && !excluded.has(l.server));
    let correct = 0;
    let fromModel = 0;
    let fromModelRight = 0;
    let defaultWouldBeRight = 0;
    let runDefaultWouldBeRight = 0;
    let alone = 0;
    for (const line of clear) {
      const c = judge(line, model);
      const right = c.action === line.label;
      if (right) correct++;
      else
        misclassified.push({
          id: line.id,
          label: line.label,
          predicted: c.action,
          source: c.source,
        });
      if (c.source === "model") {
        fromModel++;
        if (right) fromModelRight++;
        if (line.label === "correct_arguments") defaultWouldBeRight++;
        if (line.label === (line.effect === "mutating" ? "stop" : "correct_arguments"))
          runDefaultWouldBeRight++;
      }
      if (readText(line.text, model)?.action === line.label) alone++;
    }
    const personOnlyRetried = inFold.filter(
      (l) =>
        !excluded.has(l.server) &&
        l.label === "stop" &&
        judge(l, model).action === "retry_dependency",
    ).length;
    figures.push({
      fold,
      servers: new Set(clear.map((l) => l.server)).size,
      correct,
      total: clear.length,
      fromModel,
      fromModelRight,
      defaultWouldBeRight,
      runDefaultWouldBeRight,
      modelAloneCorrect: alone,
      personOnlyRetried,
    });
  }
  const sum = (k: keyof FoldFigure) => figures.reduce((s, f) => s + f[k], 0);
  return {
    method: METHOD,
    pooled: ratio(sum("correct"), sum("total")),
    folds: figures,
    fromModel: sum("fromModel"),
    fromModelRight: sum("fromModelRight"),
    defaultWouldBeRight: sum("defaultWouldBeRight"),
    runDefaultWouldBeRight: sum("runDefaultWouldBeRight"),
    modelAlone: ratio(sum("modelAloneCorrect"), sum("total")),
    personOnlyRetried: sum("personOnlyRetried"),
    misclassified,
  };
}

/** The report's lines for the text output of `pnpm eval`. */
export function formatLearnedStage(r: LearnedStageReport): string[] {
  const f = (c: number, t: number) => `${c}/${t} = ${(t === 0 ? 0 : c / t).toFixed(3)}`;
  const out = [
    `LEARNED STAGE, leave-servers-out per fold (rules + a model trained without the fold's servers): ${f(r.pooled.correct, r.pooled.total)}`,
    `  decisions from the model: ${r.fromModel}, right: ${r.fromModelRight} (the old default had ${r.defaultWouldBeRight} of them right, the run's default ${r.runDefaultWouldBeRight}); model alone (no rules): ${f(r.modelAlone.correct, r.modelAlone.total)}; person-only predicted as a retry: ${r.personOnlyRetried}`,
    `  method: ${r.method}`,
  ];
  for (const x of r.folds) {
    out.push(
      `  fold ${x.fold}: ${f(x.correct, x.total)} (${x.servers} servers; from the model ${x.fromModelRight}/${x.fromModel} right, the run's default ${x.runDefaultWouldBeRight}; model alone ${f(x.modelAloneCorrect, x.total)})`,
    );
  }
  for (const m of r.misclassified) {
    out.push(`    ${m.id}  label=${m.label}  predicted=${m.predicted} (${m.source})`);
  }
  return out;
}
