/**
 * How two labellers of one blind set agree: raw agreement, Cohen's kappa, agreement on the lines
 * each or both call unambiguous, and the confusion of their labels. With `--consensus DIR`, writes
 * the set's lines both call unambiguous and label alike to DIR/tool-errors.jsonl (with the set's
 * fingerprint pairs), for `pnpm eval --json --blind4=DIR` to score Governor on them.
 *
 *   node --import tsx scripts/label-agreement.ts test/blind4/tool-errors.jsonl SECOND.jsonl [--consensus DIR]
 *
 * SECOND.jsonl: one line per id, `{ "id", "label", "ambiguous" }` (a second labeller's, made from
 * the texts alone); it holds no texts, but the set's own file does: keep both out of rule work.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

interface Labelled {
  readonly id: string;
  readonly label: string;
  readonly ambiguous?: boolean;
}

const LABELS = ["correct_arguments", "retry_dependency", "switch_tool", "stop"] as const;

function lines(path: string): { raw: string; row: Labelled }[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((raw) => ({ raw, row: JSON.parse(raw) as Labelled }));
}

const [firstPath, secondPath] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
if (firstPath === undefined || secondPath === undefined) {
  throw new Error("usage: label-agreement.ts FIRST.jsonl SECOND.jsonl [--consensus DIR]");
}
const consensusAt = process.argv.indexOf("--consensus");
const consensusDir = consensusAt > 0 ? process.argv[consensusAt + 1] : undefined;

const first = lines(firstPath);
const second = new Map(lines(secondPath).map(({ row }) => [row.id, row]));
const missing = first.filter(({ row }) => !second.has(row.id)).map(({ row }) => row.id);
if (missing.length > 0)
  throw new Error(
    `the second labels miss ${missing.length} ids: ${missing.slice(0, 5).join(", ")}`,
  );

const confusion: Record<string, Record<string, number>> = {};
for (const a of LABELS) confusion[a] = Object.fromEntries(LABELS.map((b) => [b, 0]));
let agree = 0;
let firstClear = 0;
let firstClearAgree = 0;
let bothClear = 0;
let bothClearAgree = 0;
const consensus: string[] = [];
for (const { raw, row: a } of first) {
  const b = second.get(a.id) as Labelled;
  const same = a.label === b.label;
  if (same) agree++;
  const row = confusion[a.label];
  if (row !== undefined && b.label in row) row[b.label] = (row[b.label] ?? 0) + 1;
  if (!a.ambiguous) {
    firstClear++;
    if (same) firstClearAgree++;
    if (!b.ambiguous) {
      bothClear++;
      if (same) {
        bothClearAgree++;
        consensus.push(raw);
      }
    }
  }
}
const n = first.length;
const observed = agree / n;
let expected = 0;
for (const l of LABELS) {
  const byFirst = LABELS.reduce((s, b) => s + (confusion[l]?.[b] ?? 0), 0) / n;
  const bySecond = LABELS.reduce((s, a) => s + (confusion[a]?.[l] ?? 0), 0) / n;
  expected += byFirst * bySecond;
}
const round = (x: number) => Math.round(x * 1000) / 1000;
console.log(
  JSON.stringify(
    {
      lines: n,
      agree,
      agreement: round(observed),
      kappa: round((observed - expected) / (1 - expected)),
      firstUnambiguous: { lines: firstClear, secondAgrees: firstClearAgree },
      bothUnambiguous: { lines: bothClear, agree: bothClearAgree },
      confusion,
    },
    null,
    2,
  ),
);
if (consensusDir !== undefined) {
  mkdirSync(consensusDir, { recursive: true });
  writeFileSync(join(consensusDir, "tool-errors.jsonl"), `${consensus.join("\n")}\n`);
  copyFileSync(
    join(dirname(firstPath), "fingerprint-pairs.jsonl"),
    join(consensusDir, "fingerprint-pairs.jsonl"),
  );
}
