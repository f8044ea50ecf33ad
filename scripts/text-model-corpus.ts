/** The corpus texts the learned stage trains on (scripts/train-text-model.ts, scripts/eval-corpus.ts). */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { ModelClass } from "../packages/core/src/judge/text-model.ts";
import type { TrainingText } from "./text-model-training.ts";

/** A corpus line, as far as training reads it. */
export interface CorpusLine {
  readonly id: string;
  readonly server: string;
  readonly text: string;
  readonly label: ModelClass;
  readonly ambiguous: boolean;
  readonly fold?: number;
  /** The tool's effect where the line names it. */
  readonly effect?: "read_only" | "idempotent" | "mutating";
}

export function readCorpusLines(file: string): CorpusLine[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as CorpusLine);
}

/** Non-ambiguous texts only: a label careful engineers disagree on teaches noise. */
export function trainingTexts(lines: readonly CorpusLine[]): TrainingText[] {
  return lines
    .filter((l) => !l.ambiguous)
    .map(({ server, text, label }) => ({ server, text, label }));
}

export function corpusTrainingTexts(dir: string): TrainingText[] {
  return trainingTexts([
    ...readCorpusLines(join(dir, "tool-errors.jsonl")),
    ...readCorpusLines(join(dir, "unseen-tool-errors.jsonl")),
  ]);
}
