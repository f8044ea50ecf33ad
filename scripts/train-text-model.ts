/**
 * Writes the learned last stage's weight file, packages/core/src/judge/text-model.weights.json,
 * from the non-ambiguous texts of test/corpus (tuning and held-out servers). `pnpm eval` reports
 * how such a model does on servers it was not trained on (one model per fold).
 *
 * Usage: pnpm train-model [--check]   (--check: exit 1 when the committed file differs)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { corpusTrainingTexts } from "./text-model-corpus.ts";
import { trainTextModel } from "./text-model-training.ts";

const out = resolve("packages/core/src/judge/text-model.weights.json");
const model = trainTextModel(corpusTrainingTexts(resolve("test/corpus")), {
  trainedOn: "test/corpus tool-errors.jsonl + unseen-tool-errors.jsonl, non-ambiguous",
});
const text = `${JSON.stringify(model)}\n`;
if (process.argv.includes("--check")) {
  // The committed file is formatted by Biome: its values are compared, not its layout.
  const committed = `${JSON.stringify(JSON.parse(readFileSync(out, "utf8")))}\n`;
  if (committed !== text) {
    process.stderr.write(
      `${out} is not what scripts/train-text-model.ts makes: run pnpm train-model\n`,
    );
    process.exit(1);
  }
  process.stdout.write(`${out} is up to date\n`);
} else {
  writeFileSync(out, text);
  process.stdout.write(
    `wrote ${out}: ${Object.keys(model.weights).length} features, ${text.length} bytes\n`,
  );
}
