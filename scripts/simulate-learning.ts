// pnpm simulate [--seed N] [--occurrences N] [--gap-ms N] [--ambiguous] [--json]
// The replay simulation of learning from outcomes (issue 12.5, docs/learning.md): failure
// templates of test/corpus recur in a seeded stream of runs, each behaving as its true label
// says; the same stream runs through the real governor with learning off and on.
import { resolve } from "node:path";
import { loadTemplates, type SimulationReport, simulateLearning } from "./learning-simulation.ts";

const root = resolve(import.meta.dirname, "..");

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(process.argv[at + 1]);
  if (!Number.isSafeInteger(value) || value < 0) {
    process.stderr.write(`--${name} takes a whole number >= 0, got ${process.argv[at + 1]}\n`);
    process.exit(2);
  }
  return value;
}

const seed = flag("seed", 12);
const occurrences = flag("occurrences", 20);
const gapMs = flag("gap-ms", 5_000);
const templates = loadTemplates(
  [
    resolve(root, "test/corpus/tool-errors.jsonl"),
    resolve(root, "test/corpus/unseen-tool-errors.jsonl"),
  ],
  seed,
  { ambiguous: process.argv.includes("--ambiguous") },
);
const options = { templates, occurrences, seed, gapMs };
const without = await simulateLearning({ ...options, learning: false });
const withLearning = await simulateLearning({ ...options, learning: true });

const pick = (r: SimulationReport) => {
  const { results: _results, ...figures } = r;
  return figures;
};

if (process.argv.includes("--json")) {
  process.stdout.write(
    `${JSON.stringify({ seed, occurrences, gapMs, templates: templates.length, without: pick(without), with: pick(withLearning) }, null, 2)}\n`,
  );
} else {
  const pct = (x: number | undefined) => (x === undefined ? "-" : `${(x * 100).toFixed(1)}%`);
  const byLabel = new Map<string, number>();
  for (const t of templates) byLabel.set(t.label, (byLabel.get(t.label) ?? 0) + 1);
  const rows: [string, string, string][] = [
    ["accuracy at 1st occurrence", pct(without.accuracyAt["1"]), pct(withLearning.accuracyAt["1"])],
    ["accuracy at 5th occurrence", pct(without.accuracyAt["5"]), pct(withLearning.accuracyAt["5"])],
    [
      "accuracy at 20th occurrence",
      pct(without.accuracyAt["20"]),
      pct(withLearning.accuracyAt["20"]),
    ],
    ["tool calls", String(without.calls), String(withLearning.calls)],
    ["wasted calls", String(without.wastedCalls), String(withLearning.wastedCalls)],
    ["retries", String(without.retries), String(withLearning.retries)],
    [
      "retries of person-only templates",
      String(without.personOnlyRetries),
      String(withLearning.personOnlyRetries),
    ],
    [
      "retries of mutating tools",
      String(without.mutationRetries),
      String(withLearning.mutationRetries),
    ],
    ["occurrences recovered", String(without.recovered), String(withLearning.recovered)],
    ["learned overrides", String(without.learnedOverrides), String(withLearning.learnedOverrides)],
  ];
  const width = Math.max(...rows.map((r) => r[0].length));
  const lines = [
    `${templates.length} ${process.argv.includes("--ambiguous") ? "" : "non-ambiguous "}templates (${[...byLabel].map(([l, n]) => `${n} ${l}`).join(", ")}), ${occurrences} occurrences each, ${without.runs} runs, seed ${seed}, ${gapMs} ms between runs`,
    "",
    `${"".padEnd(width)}  ${"without".padStart(9)}  ${"learning".padStart(9)}`,
    ...rows.map(([name, a, b]) => `${name.padEnd(width)}  ${a.padStart(9)}  ${b.padStart(9)}`),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}
