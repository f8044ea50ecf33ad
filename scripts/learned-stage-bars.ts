/**
 * The learned stage's bars measured the honest way (issue 27.2): per fold of held-out servers, a
 * model trained without the fold's servers reads the fold's non-ambiguous texts that no rule
 * speaks for, and each setting of the bars (`takeReading` in packages/core/src/judge/classify.ts)
 * decides them as the run would (a guessed correction of a `mutating` tool stops). Printed per
 * fold: decisions from the model / right / right for the run's default (a correction, a stop on
 * a mutating tool), and the gain over the default. The shipped bars are `MODEL_BARS`; set them on
 * this figure, never on a blind set.
 *
 * Usage: node --conditions=source --import tsx scripts/learned-stage-bars.ts [corpus-dir]
 */
import { join, resolve } from "node:path";
import { failureFromResult, loadPolicy } from "@governor/core";
import { classify, resolveToolPolicy } from "@governor/core/judge";
import { MODEL_BARS, type ModelBars, takeReading } from "../packages/core/src/judge/classify.ts";
import { readText } from "../packages/core/src/judge/text-model.ts";
import { decidedAction } from "./eval-decided.ts";
import { leaveFoldOut } from "./eval-learned-stage.ts";
import { readCorpusLines } from "./text-model-corpus.ts";

const POLICY = loadPolicy({});
const dir = resolve(process.argv[2] ?? "test/corpus");
const tuning = readCorpusLines(join(dir, "tool-errors.jsonl"));
const heldOut = readCorpusLines(join(dir, "unseen-tool-errors.jsonl"));
const folds = leaveFoldOut(tuning, heldOut);

const grid: ModelBars[] = [];
for (const sureAt of [0.4, 0.5, 0.6, 0.7, 0.8])
  for (const retryAt of [0.7, 0.85, 0.95]) grid.push({ ...MODEL_BARS, sureAt, retryAt });

if (!grid.some((b) => key(b) === key(MODEL_BARS))) grid.push(MODEL_BARS);
function key(b: ModelBars): string {
  return `sureAt ${b.sureAt} retryAt ${b.retryAt} unsureStopOver ${b.unsureStopOver}`;
}
/** Per setting, per fold: [decided, right, runDefaultRight]. */
const tally = new Map<string, number[][]>();
for (const [f, { inFold, model }] of folds.entries()) {
  for (const line of inFold.filter((l) => !l.ambiguous)) {
    const failure = failureFromResult({
      content: [{ type: "text", text: line.text }],
      isError: true,
    });
    const tool = resolveToolPolicy(POLICY, (line as { tool?: string }).tool ?? "tool");
    const c = classify(failure, tool, undefined, model);
    if (c.source !== "model" || c.model === undefined) continue;
    const reading = readText(line.text, model);
    if (reading === undefined) continue;
    const runDefault = line.effect === "mutating" ? "stop" : "correct_arguments";
    for (const bars of grid) {
      const t = takeReading(reading, bars);
      // What the run does with the reading taken under these bars: the asymmetry of harm is
      // decidedAction's (stopsGuessedWrite in decide.ts), not decided again here.
      const { stopOnWrite: _shipped, ...facts } = c.model;
      const decided = decidedAction(
        {
          ...c,
          action: t.action,
          model: { ...facts, ...(t.stopOnWrite && { stopOnWrite: true as const }) },
        },
        line.effect,
      );
      const rows = tally.get(key(bars)) ?? folds.map(() => [0, 0, 0]);
      const row = rows[f] as number[];
      row[0] = (row[0] as number) + 1;
      if (decided === line.label) row[1] = (row[1] as number) + 1;
      if (runDefault === line.label) row[2] = (row[2] as number) + 1;
      tally.set(key(bars), rows);
    }
  }
}
const lines = [...tally].map(([k, rows]) => {
  const gains = rows.map((r) => (r[1] as number) - (r[2] as number));
  return {
    k,
    perFold: rows.map((r) => r.join("/")).join("  "),
    gain: gains.reduce((a, b) => a + b, 0),
    worstFold: Math.min(...gains),
  };
});
lines.sort((a, b) => b.worstFold - a.worstFold || b.gain - a.gain || (a.k < b.k ? -1 : 1));
const shipped = lines.find((l) => l.k === key(MODEL_BARS));
process.stdout.write(
  `per fold: decisions from the model / right / right for the run's default; gain = right - default right\n` +
    `shipped  ${shipped?.k}: ${shipped?.perFold}  gain ${shipped?.gain}, worst fold ${shipped?.worstFold}\n`,
);
for (const l of lines.slice(0, 10))
  process.stdout.write(
    `         ${l.k}: ${l.perFold}  gain ${l.gain}, worst fold ${l.worstFold}\n`,
  );
const worst = lines.at(-1);
process.stdout.write(
  `worst    ${worst?.k}: ${worst?.perFold}  gain ${worst?.gain}, worst fold ${worst?.worstFold}\n`,
);
