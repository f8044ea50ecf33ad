/**
 * Scores the built-in text rules on a labelled corpus: confusion matrices (rows = label, columns =
 * predicted), accuracy, and the misclassified non-ambiguous entries.
 *
 * Usage: pnpm eval [corpus-dir]   (default: test/corpus)
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { failureFromResult, loadPolicy } from "@governor/core";
import { classify, resolveToolPolicy } from "@governor/core/judge";

const POLICY = loadPolicy({});

const LABELS = ["correct_arguments", "retry_dependency", "switch_tool", "stop"] as const;
type Label = (typeof LABELS)[number];

interface Entry {
  readonly id: string;
  readonly text: string;
  readonly label: Label;
  readonly ambiguous: boolean;
}

interface Scored extends Entry {
  readonly predicted: string;
  readonly reason: string;
}

function load(file: string): Entry[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as Entry);
}

function predict(entry: Entry): Scored {
  // The whole classifier, as `governor classify` runs it on a text line (no policy rules).
  const failure = failureFromResult({
    content: [{ type: "text", text: entry.text }],
    isError: true,
  });
  const c = classify(failure, resolveToolPolicy(POLICY, "tool"));
  return { ...entry, predicted: c.action, reason: c.reason };
}

function matrix(title: string, rows: readonly Scored[]): string {
  const width = Math.max(...LABELS.map((l) => l.length)) + 2;
  const pad = (s: string) => s.padStart(width);
  const lines = [`${title} (${rows.length} entries; rows = label, columns = predicted)`];
  lines.push(`${"".padEnd(width)}${LABELS.map(pad).join("")}`);
  for (const label of LABELS) {
    const counts = LABELS.map((p) =>
      String(rows.filter((r) => r.label === label && r.predicted === p).length),
    );
    lines.push(`${label.padEnd(width)}${counts.map(pad).join("")}`);
  }
  const correct = rows.filter((r) => r.predicted === r.label).length;
  const accuracy = rows.length === 0 ? 0 : correct / rows.length;
  lines.push(`accuracy: ${correct}/${rows.length} = ${accuracy.toFixed(3)}`);
  return lines.join("\n");
}

const dir = resolve(process.argv[2] ?? "test/corpus");
const scored = load(join(dir, "tool-errors.jsonl")).map(predict);
const clear = scored.filter((r) => !r.ambiguous);

const out: string[] = [];
out.push(matrix("Non-ambiguous", clear), "");
out.push(matrix("All", scored), "");

const stopAsRetry = scored.filter((r) => r.label === "stop" && r.predicted === "retry_dependency");
out.push(`stop predicted as retry_dependency: ${stopAsRetry.length}`);
for (const r of stopAsRetry) out.push(`  ${r.id}${r.ambiguous ? " (ambiguous)" : ""}`);
out.push("");

const wrong = clear.filter((r) => r.predicted !== r.label);
out.push(`Misclassified non-ambiguous entries: ${wrong.length}`);
for (const r of wrong) {
  const text = r.text.replace(/\s+/g, " ").slice(0, 120);
  out.push(`  ${r.id}  label=${r.label}  predicted=${r.predicted} (${r.reason})\n    ${text}`);
}
const wrongAmbiguous = scored.filter((r) => r.ambiguous && r.predicted !== r.label);
out.push("", `Ambiguous entries predicted differently from their label: ${wrongAmbiguous.length}`);
for (const r of wrongAmbiguous) {
  out.push(`  ${r.id}  label=${r.label}  predicted=${r.predicted} (${r.reason})`);
}

process.stdout.write(`${out.join("\n")}\n`);
