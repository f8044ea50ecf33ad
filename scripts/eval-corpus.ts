/**
 * Scores the built-in text rules and the stateless fingerprint on the labelled corpus.
 *
 * Headline: the leave-servers-out figure, accuracy on the non-ambiguous texts of held-out servers
 * (test/corpus/unseen-tool-errors.jsonl), servers the rules were never tuned on; beside it the
 * in-sample figure on the tuning servers (test/corpus/tool-errors.jsonl). The method is in
 * test/corpus/README.md ("Honest measurement"). Also: per-server and per-fold figures of the
 * held-out servers, held-out servers whose texts a test or the rule table mentions (excluded from
 * the headline), person-only failures predicted as a retry (must be 0), confusion matrices, and
 * fingerprint recall / merge rate on labelled pairs (test/corpus/fingerprint-pairs.jsonl).
 *
 * Usage: pnpm eval [--json] [corpus-dir]   (default: test/corpus)
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { failureFromResult, loadPolicy } from "@governor/core";
import { classify, fingerprint, resolveToolPolicy } from "@governor/core/judge";
import type { TextModel } from "../packages/core/src/judge/text-model.ts";
import { formatHardPairs, hardPairsReport } from "./eval-hard-pairs.ts";
import { formatLearnedStage, learnedStageReport } from "./eval-learned-stage.ts";

const POLICY = loadPolicy({});

/**
 * The figures below are the rules' alone: a model that knows no word leaves the default in place.
 * The shipped text model was trained on these texts; the learned stage has its own, honest,
 * per-fold figure (eval-learned-stage.ts).
 */
const RULES_ONLY: TextModel = { v: 1, trainedOn: "nothing", bias: [0, 0, 0, 0], weights: {} };

const LABELS = ["correct_arguments", "retry_dependency", "switch_tool", "stop"] as const;
type Label = (typeof LABELS)[number];

interface Entry {
  readonly id: string;
  readonly server: string;
  /** The tool that answered (or, for an unknown tool, the name the model called). */
  readonly tool: string;
  readonly template?: string;
  readonly text: string;
  readonly label: Label;
  readonly ambiguous: boolean;
  readonly fold?: number;
}

interface Scored extends Entry {
  readonly predicted: string;
  readonly reason: string;
}

interface Pair {
  readonly id: string;
  readonly tool: string;
  readonly a: string;
  readonly b: string;
  readonly same: boolean;
  readonly kind: string;
}

function load<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

function toFailure(text: string) {
  return failureFromResult({ content: [{ type: "text", text }], isError: true });
}

function predict(entry: Entry): Scored {
  // The whole classifier, as `governor classify` runs it on a text line (no policy rules), for
  // the tool that answered: a text naming another tool as unknown is not about the one called.
  const c = classify(
    toFailure(entry.text),
    resolveToolPolicy(POLICY, entry.tool),
    undefined,
    RULES_ONLY,
  );
  return { ...entry, predicted: c.action, reason: c.reason };
}

interface Score {
  readonly correct: number;
  readonly total: number;
  readonly accuracy: number;
}

function score(rows: readonly Scored[]): Score {
  const correct = rows.filter((r) => r.predicted === r.label).length;
  return { correct, total: rows.length, accuracy: rows.length === 0 ? 0 : correct / rows.length };
}

const fmt = (s: Score) => `${s.correct}/${s.total} = ${s.accuracy.toFixed(3)}`;

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
  lines.push(`accuracy: ${fmt(score(rows))}`);
  return lines.join("\n");
}

/** Groups rows by a key, keys sorted. */
function groupBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const k = key(row);
    const list = groups.get(k) ?? [];
    list.push(row);
    groups.set(k, list);
  }
  return new Map([...groups].sort(([a], [b]) => a.localeCompare(b)));
}

/** Tests that read corpus texts for something other than the rules. */
const NOT_RULE_TESTS = new Set([
  "corpus.test.ts",
  "fingerprint.test.ts",
  "fingerprint.mutation.test.ts",
]);

/** Every `*.test.ts` under a directory, and the rule table: where tuning on a text would show. */
function tuningSources(root: string): { file: string; text: string }[] {
  const files: string[] = [join(root, "packages/core/src/judge/rules.ts")];
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      if (d.name === "node_modules" || d.name === "dist") continue;
      const path = join(dir, d.name);
      if (d.isDirectory()) walk(path);
      // Fingerprint tests quote held-out texts to pin the normalizer, not to tune the rules.
      else if (d.name.endsWith(".test.ts") && !NOT_RULE_TESTS.has(d.name)) files.push(path);
    }
  };
  walk(join(root, "packages"));
  walk(join(root, "test"));
  return files
    .filter((f) => existsSync(f))
    .map((file) => ({
      file: relative(root, file),
      text: readFileSync(file, "utf8").toLowerCase(),
    }));
}

/**
 * The literal stretches of a held-out entry that would betray tuning on it: the template's parts
 * between placeholders and the text itself, 24 characters or longer.
 */
function telltales(entry: Entry): string[] {
  const parts = (entry.template ?? "")
    .split(/\$\{[^}]*\}|\{[^}]*\}|%[sdvqw]|<[^>]*>/)
    .map((p) => p.trim());
  return [...parts, entry.text.trim()].filter((p) => p.length >= 24).map((p) => p.toLowerCase());
}

const args = process.argv.slice(2);
const json = args.includes("--json");
const dir = resolve(args.find((a) => !a.startsWith("--")) ?? "test/corpus");
const root = resolve(dir, "../..");

const tuning = load<Entry>(join(dir, "tool-errors.jsonl")).map(predict);
const heldOutAll = load<Entry>(join(dir, "unseen-tool-errors.jsonl")).map(predict);
const pairs = load<Pair>(join(dir, "fingerprint-pairs.jsonl"));

// Held-out servers whose texts a test or the rule table quotes are not held out any more. A
// stretch that a tuning text or another held-out server's text also holds is a general phrasing
// (`connect ECONNREFUSED 127.0.0.1:`), not a sign of tuning on this server.
const sources = tuningSources(root);
const mentioned = new Map<string, string>();
const general = (t: string, server: string) =>
  tuning.some((r) => r.text.toLowerCase().includes(t)) ||
  heldOutAll.some((r) => r.server !== server && r.text.toLowerCase().includes(t));
for (const entry of heldOutAll) {
  if (mentioned.has(entry.server)) continue;
  for (const t of telltales(entry)) {
    if (general(t, entry.server)) continue;
    const hit = sources.find((s) => s.text.includes(t));
    if (hit) {
      mentioned.set(entry.server, `${entry.id} in ${hit.file}`);
      break;
    }
  }
}
const heldOut = heldOutAll.filter((r) => !mentioned.has(r.server));
const clearHeldOut = heldOut.filter((r) => !r.ambiguous);
const clearTuning = tuning.filter((r) => !r.ambiguous);

const perServer = [...groupBy(clearHeldOut, (r) => r.server)].map(([server, rows]) => ({
  server,
  fold: rows[0]?.fold ?? 0,
  ...score(rows),
}));
const perFold = [...groupBy(clearHeldOut, (r) => String(r.fold ?? 0))].map(([fold, rows]) => ({
  fold: Number(fold),
  servers: new Set(rows.map((r) => r.server)).size,
  ...score(rows),
}));
const macro =
  perServer.length === 0 ? 0 : perServer.reduce((s, p) => s + p.accuracy, 0) / perServer.length;

// A failure only a person can fix (label stop), predicted as a retry: counted on every entry.
const personOnlyRetried = [...tuning, ...heldOutAll].filter(
  (r) => r.label === "stop" && r.predicted === "retry_dependency",
);

// Fingerprints: what `governor classify` prints for one text line.
const print = (tool: string, text: string) => {
  const f = toFailure(text);
  return fingerprint({
    tool,
    channel: f.channel,
    text: f.text,
    ...(f.code !== undefined && { code: f.code }),
  });
};
const judgedPairs = pairs.map((p) => ({ ...p, merged: print(p.tool, p.a) === print(p.tool, p.b) }));
const samePairs = judgedPairs.filter((p) => p.same);
const diffPairs = judgedPairs.filter((p) => !p.same);
const ratio = (n: number, d: number) => (d === 0 ? 0 : n / d);
const fingerprints = {
  samePairs: samePairs.length,
  sameMerged: samePairs.filter((p) => p.merged).length,
  recall: ratio(samePairs.filter((p) => p.merged).length, samePairs.length),
  differentPairs: diffPairs.length,
  differentMerged: diffPairs.filter((p) => p.merged).length,
  mergeRate: ratio(diffPairs.filter((p) => p.merged).length, diffPairs.length),
  perKind: [...groupBy(judgedPairs, (p) => `${p.same ? "same" : "different"}:${p.kind}`)].map(
    ([kind, rows]) => ({ kind, pairs: rows.length, merged: rows.filter((p) => p.merged).length }),
  ),
  missed: samePairs.filter((p) => !p.merged).map((p) => p.id),
  wronglyMerged: diffPairs.filter((p) => p.merged).map((p) => p.id),
};

const METHOD =
  "leave-servers-out = accuracy on non-ambiguous texts of held-out servers " +
  "(unseen-tool-errors.jsonl: no rule was written or tested on them; servers whose texts a test " +
  "or rules.ts quotes are excluded); folds = fixed groups of held-out servers, one figure each";

const report = {
  method: METHOD,
  headline: {
    leaveServersOut: { ...score(clearHeldOut), servers: perServer.length, macroPerServer: macro },
    inSample: { ...score(clearTuning), servers: new Set(tuning.map((r) => r.server)).size },
    personOnlyRetried: personOnlyRetried.length,
  },
  folds: perFold,
  perServer,
  excludedServers: [...mentioned].map(([server, where]) => ({ server, where })),
  allHeldOut: score(heldOut),
  allInSample: score(tuning),
  personOnlyRetried: personOnlyRetried.map((r) => r.id),
  misclassifiedHeldOut: clearHeldOut
    .filter((r) => r.predicted !== r.label)
    .map((r) => ({ id: r.id, label: r.label, predicted: r.predicted, reason: r.reason })),
  misclassifiedInSample: clearTuning
    .filter((r) => r.predicted !== r.label)
    .map((r) => ({ id: r.id, label: r.label, predicted: r.predicted, reason: r.reason })),
  fingerprints,
  learnedStage: learnedStageReport(dir, new Set(mentioned.keys())),
  hardFingerprintPairs: hardPairsReport(dir),
};

if (json) {
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
} else {
  const h = report.headline;
  const out: string[] = [];
  out.push(...formatLearnedStage(report.learnedStage), "");
  out.push(...formatHardPairs(report.hardFingerprintPairs), "");
  out.push(
    `LEAVE-SERVERS-OUT (headline): ${fmt(h.leaveServersOut)} on ${h.leaveServersOut.servers} held-out servers; ` +
      `macro per server ${macro.toFixed(3)}`,
    `in-sample (tuning servers):   ${fmt(h.inSample)} on ${h.inSample.servers} servers`,
    `person-only failures predicted as a retry (must be 0): ${h.personOnlyRetried}`,
    `method: ${METHOD}`,
    "",
  );
  const spread = perFold.map((f) => f.accuracy);
  const range =
    spread.length === 0
      ? "none yet"
      : `min ${Math.min(...spread).toFixed(3)}, max ${Math.max(...spread).toFixed(3)}`;
  out.push(`Folds of held-out servers (${range}):`);
  for (const f of perFold) out.push(`  fold ${f.fold}: ${fmt(f)} (${f.servers} servers)`);
  out.push("", "Held-out servers (non-ambiguous):");
  for (const p of perServer) out.push(`  ${fmt(p).padEnd(16)} fold ${p.fold}  ${p.server}`);
  if (mentioned.size > 0) {
    out.push("", "Held-out servers excluded (a test or the rule table quotes their text):");
    for (const [server, where] of mentioned) out.push(`  ${server}: ${where}`);
  }
  out.push("");
  for (const r of personOnlyRetried) out.push(`  person-only retried: ${r.id}`);
  out.push(matrix("Held-out, non-ambiguous", clearHeldOut), "");
  out.push(matrix("Held-out, all", heldOut), "");
  out.push(matrix("In-sample, non-ambiguous", clearTuning), "");
  out.push(matrix("In-sample, all", tuning), "");
  const wrong = [...clearHeldOut, ...clearTuning].filter((r) => r.predicted !== r.label);
  out.push(`Misclassified non-ambiguous entries: ${wrong.length}`);
  for (const r of wrong) {
    const text = r.text.replace(/\s+/g, " ").slice(0, 120);
    out.push(`  ${r.id}  label=${r.label}  predicted=${r.predicted} (${r.reason})\n    ${text}`);
  }
  const wrongAmbiguous = [...heldOut, ...tuning].filter(
    (r) => r.ambiguous && r.predicted !== r.label,
  );
  out.push(
    "",
    `Ambiguous entries predicted differently from their label: ${wrongAmbiguous.length}`,
  );
  for (const r of wrongAmbiguous) {
    out.push(`  ${r.id}  label=${r.label}  predicted=${r.predicted} (${r.reason})`);
  }
  const f = fingerprints;
  out.push(
    "",
    `Fingerprints (stateless, as \`governor classify\` prints them) on ${pairs.length} labelled pairs:`,
    `  same-template recall: ${f.sameMerged}/${f.samePairs} = ${f.recall.toFixed(3)}`,
    `  different-template merges: ${f.differentMerged}/${f.differentPairs} = ${f.mergeRate.toFixed(3)}`,
  );
  for (const k of f.perKind) out.push(`    ${k.kind}: ${k.merged}/${k.pairs} merged`);
  if (f.missed.length > 0) out.push(`  same-template pairs apart: ${f.missed.join(", ")}`);
  if (f.wronglyMerged.length > 0) {
    out.push(`  different-template pairs merged: ${f.wronglyMerged.join(", ")}`);
  }
  process.stdout.write(`${out.join("\n")}\n`);
}
