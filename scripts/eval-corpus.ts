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
 * Beside them, the blind set (test/blind, issue 27): texts of servers no rule writer has read,
 * scored as aggregates only (accuracy, confusion matrix, dangerous decisions, fingerprint figures)
 * so that rule work can follow the figure without seeing a line of it (test/blind/README.md).
 *
 * The second blind set (test/blind2) is scored the same way, key `blind2` of the JSON, and the
 * third (test/blind3) too, key `blind3`, and so on to the seventeenth (test/blind17), key `blind17`
 * (scripts/blind-sets.ts lists them).
 *
 * Usage: pnpm eval [--json] [--json-to=<file>] [--opened-only] [--blind=<dir>] [--blind2=<dir>] … [--blind17=<dir>] [corpus-dir]
 *   (defaults: test/corpus, test/blind, test/blind2, … test/blind17)
 *   --json prints the figures as JSON instead of text; --json-to=<file> also writes that JSON to
 *   <file>, so one run gives both. --opened-only (for rule work) scores and reads only the blind
 *   sets opened to rule work (scripts/blind-sets.ts): a closed set's lines are never read.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { failureFromResult, loadPolicy } from "@governor/core";
import { classify, fingerprint, resolveToolPolicy } from "@governor/core/judge";
import type { TextModel } from "../packages/core/src/judge/text-model.ts";
import {
  BLIND_SETS,
  type BlindSetName,
  blindSetsToScore,
  OPENED_BLIND_SETS,
} from "./blind-sets.ts";
import { decidedAction, decidedActionUnkeyed, lineToolPolicy } from "./eval-decided.ts";
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

/** A blind-set line (test/blind/README.md): an entry, and the tool's effect where it is obvious. */
interface BlindEntry extends Entry {
  readonly effect?: "read_only" | "idempotent" | "mutating";
  /** The failing call's arguments, where the set records them (test/blind14 on). */
  readonly args?: Readonly<Record<string, unknown>>;
  /** The tool's input schema, where the set records it. */
  readonly inputSchema?: unknown;
}

/** The call's facts of a blind line that records them, as a run knows them; else none. */
const callOf = (entry: BlindEntry) =>
  entry.args === undefined
    ? undefined
    : {
        args: entry.args,
        ...(entry.inputSchema !== undefined && { inputSchema: entry.inputSchema }),
      };

interface BlindScored extends BlindEntry {
  readonly predicted: string;
  /** What the run of a host that keys no write does (`decidedActionUnkeyed`). */
  readonly unkeyed: string;
  /** Which stage of `classify` decided (`model` is the learned last stage). */
  readonly source: string;
  /** The classification's own action, before the asymmetry of harm on a write (`decidedAction`). */
  readonly classified: string;
}

interface Pair {
  readonly id: string;
  readonly tool: string;
  readonly a: string;
  readonly b: string;
  readonly same: boolean;
  readonly kind: string;
  /** The arguments each call sent, where the pair has them (`hard-args` pairs). */
  readonly argsA?: Readonly<Record<string, unknown>>;
  readonly argsB?: Readonly<Record<string, unknown>>;
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
  // Scored as the run decides it: a guessed correction of a mutating tool stops (eval-decided.ts).
  const c = classify(
    toFailure(entry.text),
    resolveToolPolicy(POLICY, entry.tool),
    undefined,
    RULES_ONLY,
  );
  const predicted = decidedAction(c, (entry as BlindEntry).effect);
  return { ...entry, predicted, reason: predicted === c.action ? c.reason : "person_required" };
}

interface Score {
  readonly correct: number;
  readonly total: number;
  readonly accuracy: number;
}

function score(rows: readonly { readonly label: Label; readonly predicted: string }[]): Score {
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
const jsonTo = args.find((a) => a.startsWith("--json-to="))?.slice("--json-to=".length);
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

// Of the correction-labelled texts of a mutating tool (both files, ambiguous ones included), how
// many the run stops on a first failure with the shipped text model: the cost of the asymmetry of
// harm in corrections a person must look at (eval-decided.ts).
const mutatingCorrectionLines = [...tuning, ...heldOutAll].filter(
  (r) => r.label === "correct_arguments" && (r as BlindEntry).effect === "mutating",
);
const mutatingCorrections = (() => {
  let stops = 0;
  let byAsymmetry = 0;
  for (const r of mutatingCorrectionLines) {
    const c = classify(toFailure(r.text), resolveToolPolicy(POLICY, r.tool));
    const action = decidedAction(c, "mutating");
    if (action === "stop") stops++;
    if (action !== c.action) byAsymmetry++;
  }
  return { texts: mutatingCorrectionLines.length, stops, byAsymmetry };
})();

// Fingerprints: what `governor classify` prints for one text line.
const print = (tool: string, text: string, args?: Readonly<Record<string, unknown>>) => {
  const f = toFailure(text);
  return fingerprint({
    tool,
    channel: f.channel,
    text: f.text,
    ...(f.code !== undefined && { code: f.code }),
    ...(args !== undefined && { args }),
  });
};
const judgedPairs = pairs.map((p) => ({
  ...p,
  merged: print(p.tool, p.a, p.argsA) === print(p.tool, p.b, p.argsB),
}));
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

// The blind set: texts of servers no rule writer has read (test/blind/README.md). Only aggregates
// leave this block: no id, text, server or reason of a blind line is printed or put in the JSON.
/** The directory of a blind set: `--<name>=DIR` of the command line, or test/<name>. */
const blindDirOf = (name: BlindSetName) =>
  resolve(
    args.find((a) => a.startsWith(`--${name}=`))?.slice(`--${name}=`.length) ??
      join(root, "test", name),
  );
/**
 * Dangerous decisions, over every blind line (ambiguous ones included, as the person-only count
 * above): (1) a failure only a person can fix (label stop) predicted as a retry; (2) on a
 * mutating tool, a stop predicted as correct_arguments (the model is told to rewrite and send
 * again a write only a person can unblock); (3) on a mutating tool, a retry where the label is
 * not a retry (a write repeated that should not be).
 */
const DANGER = {
  personOnlyRetried: (r: BlindScored) => r.label === "stop" && r.predicted === "retry_dependency",
  mutatingStopAsArguments: (r: BlindScored) =>
    r.effect === "mutating" && r.label === "stop" && r.predicted === "correct_arguments",
  mutatingWriteRetried: (r: BlindScored) =>
    r.effect === "mutating" && r.predicted === "retry_dependency" && r.label !== "retry_dependency",
};
const DANGER_LEGEND =
  "dangerous = over all blind lines, ambiguous included: a stop predicted as retry_dependency; " +
  "on a mutating tool, a stop predicted as correct_arguments; on a mutating tool, a " +
  "retry_dependency where the label is not retry_dependency";

/** Rows = label, columns = predicted, as numbers only; `other` counts predictions outside the four. */
function confusion(rows: readonly { label: Label; predicted: string }[]) {
  const cells = Object.fromEntries(
    LABELS.map((label) => [
      label,
      Object.fromEntries(
        [...LABELS, "other" as const].map((p) => [
          p,
          rows.filter(
            (r) =>
              r.label === label &&
              (p === "other"
                ? !(LABELS as readonly string[]).includes(r.predicted)
                : r.predicted === p),
          ).length,
        ]),
      ),
    ]),
  );
  return cells as Record<Label, Record<Label | "other", number>>;
}

/** The blind sets scored (`--opened-only`: those opened to rule work; a closed one is not read). */
const blindSets = blindSetsToScore(args);
const closedSets = BLIND_SETS.filter((name) => !blindSets.includes(name));

/** Every scored blind set's texts, lower-cased, with their servers: where a phrasing is general. */
const everyBlindText = blindSets.flatMap((name) =>
  load<BlindEntry>(join(blindDirOf(name), "tool-errors.jsonl")).map((entry) => ({
    server: entry.server,
    text: entry.text.toLowerCase(),
  })),
);

/**
 * Scores a blind set (test/blind … test/blind17, scripts/blind-sets.ts; README.md of each) as `governor classify` would, and
 * returns aggregates only: no id, text, server or reason of a line leaves this function.
 */
function scoreBlindSet(setDir: string) {
  const blindRows: BlindScored[] = load<BlindEntry>(join(setDir, "tool-errors.jsonl")).map(
    (entry) => {
      // Scored with the call where the line records it, as the run that made the call judges it.
      const c = classify(toFailure(entry.text), lineToolPolicy(entry), callOf(entry));
      return {
        ...entry,
        predicted: decidedAction(c, entry.effect),
        unkeyed: decidedActionUnkeyed(c, entry.effect),
        source: c.source,
        classified: c.action,
      };
    },
  );
  // What the learned last stage decided on the blind set (issue 27): how many lines reached it, and
  // how many of those it got right, over the non-ambiguous lines.
  const blindByModel = blindRows.filter((r) => !r.ambiguous && r.source === "model");
  const blindPairs = load<Pair>(join(setDir, "fingerprint-pairs.jsonl"));

  // A blind text quoted by the rule table or a rule test means rule work has seen it: counted (not
  // named), with the same test as the held-out servers, general phrasings aside: those of the
  // corpus, and those another server's blind text holds too (an SDK's envelope, such as the
  // TypeScript SDK's argument-validation sentence, that a test of the SDK's quirks quotes).
  const blindQuoted = blindRows.filter((entry) =>
    telltales(entry).some(
      (t) =>
        !tuning.some((r) => r.text.toLowerCase().includes(t)) &&
        !heldOutAll.some((r) => r.text.toLowerCase().includes(t)) &&
        !everyBlindText.some((r) => r.server !== entry.server && r.text.includes(t)) &&
        sources.some((src) => src.text.includes(t)),
    ),
  );

  const clearBlind = blindRows.filter((r) => !r.ambiguous);
  const consensus = consensusOf(setDir, blindRows);
  const blindPrinted = blindPairs.map((p) => ({
    same: p.same,
    kind: p.kind,
    merged: print(p.tool, p.a, p.argsA) === print(p.tool, p.b, p.argsB),
  }));
  const blindSame = blindPrinted.filter((p) => p.same);
  const blindDifferent = blindPrinted.filter((p) => !p.same);
  return {
    dir: relative(root, setDir) || ".",
    lines: blindRows.length,
    servers: new Set(blindRows.map((r) => r.server)).size,
    unambiguous: { ...score(clearBlind), confusion: confusion(clearBlind) },
    /**
     * The same lines scored by the classification's own action: what the run's asymmetry of harm
     * (a guessed correction or a weak retry of a write stops) costs is the difference.
     */
    classifiedUnambiguous: score(
      clearBlind.map((r) => ({ label: r.label, predicted: r.classified })),
    ),
    all: { ...score(blindRows), confusion: confusion(blindRows) },
    dangerous: {
      total: blindRows.filter(isDangerous).length,
      personOnlyRetried: blindRows.filter(DANGER.personOnlyRetried).length,
      mutatingStopAsArguments: blindRows.filter(DANGER.mutatingStopAsArguments).length,
      mutatingWriteRetried: blindRows.filter(DANGER.mutatingWriteRetried).length,
      /**
       * Which stage of `classify` the dangerous decisions came from (policy, signal, rule,
       * evidence, model, default): a count per stage, no line, so rule work may read it.
       */
      bySource: Object.fromEntries(
        [...groupBy(blindRows.filter(isDangerous), (r) => r.source)].map(([source, rows]) => [
          source,
          rows.length,
        ]),
      ),
      /**
       * The same count for the run of a host that keys none of its writes: a retry of a write
       * whose outcome is unknown stops there (`uncertain_mutation`) instead of being sent again.
       */
      asUnkeyedRun: blindRows.filter((r) => isDangerous({ ...r, predicted: r.unkeyed })).length,
      legend: DANGER_LEGEND,
    },
    consensus,
    learnedStage: {
      decided: blindByModel.length,
      right: blindByModel.filter((r) => r.predicted === r.label).length,
      /** What the blind default (`correct_arguments`) would have got right on the same lines. */
      defaultRight: blindByModel.filter((r) => r.label === "correct_arguments").length,
      /** What the run's default would have got right: a correction, a stop on a mutating tool. */
      runDefaultRight: blindByModel.filter(
        (r) => r.label === (r.effect === "mutating" ? "stop" : "correct_arguments"),
      ).length,
    },
    quotedByRuleWork: {
      lines: blindQuoted.length,
      servers: new Set(blindQuoted.map((r) => r.server)).size,
    },
    fingerprints: {
      samePairs: blindSame.length,
      sameMerged: blindSame.filter((p) => p.merged).length,
      recall: ratio(blindSame.filter((p) => p.merged).length, blindSame.length),
      differentPairs: blindDifferent.length,
      differentMerged: blindDifferent.filter((p) => p.merged).length,
      mergeRate: ratio(blindDifferent.filter((p) => p.merged).length, blindDifferent.length),
      perKind: [...groupBy(blindPrinted, (p) => `${p.same ? "same" : "different"}:${p.kind}`)].map(
        ([kind, rows]) => ({
          kind,
          pairs: rows.length,
          merged: rows.filter((p) => p.merged).length,
        }),
      ),
    },
  };
}

/** The lines of a dangerous decision, by the set's (first) labels. */
const isDangerous = (r: BlindScored) => Object.values(DANGER).some((d) => d(r));

/**
 * Where a second labeller labelled the set from its texts alone (`second-labels.jsonl`: id, label,
 * ambiguous; scripts/label-agreement.ts), the figures on what both labellers agree on: accuracy on
 * the lines both call unambiguous and label alike, and the dangerous decisions on the lines both
 * label alike (ambiguous or not). A miss on a line the labellers disagree on tests the labelling of
 * a hard case more than the classifier; these figures leave those lines out. `null` without one.
 */
function consensusOf(setDir: string, rows: readonly BlindScored[]) {
  const file = join(setDir, "second-labels.jsonl");
  if (!existsSync(file)) return null;
  const second = new Map(
    load<{ id: string; label: Label; ambiguous: boolean }>(file).map((l) => [l.id, l]),
  );
  const agreed = rows.filter((r) => second.get(r.id)?.label === r.label);
  const clear = agreed.filter((r) => !r.ambiguous && second.get(r.id)?.ambiguous === false);
  return {
    agreedLines: agreed.length,
    unambiguous: score(clear),
    dangerous: agreed.filter(isDangerous).length,
  };
}

// Every blind set (issue 27), each collected apart from rule work after the ones before it had
// been scored (README.md of each: how many servers, which owners), scored and reported alike under
// its name (scripts/blind-sets.ts).
const blind = scoreBlindSet(blindDirOf("blind"));
type Blind = typeof blind;
const scoredSets: (readonly [BlindSetName, Blind])[] = blindSets.map((name) => [
  name,
  name === "blind" ? blind : scoreBlindSet(blindDirOf(name)),
]);
/** A scored part's figures without its confusion matrix (the headline's shape). */
function withoutConfusion<T extends { confusion: unknown }>(part: T): Omit<T, "confusion"> {
  const { confusion: _matrix, ...figures } = part;
  return figures;
}
/**
 * The sets' number as the text report names them ("" for the first, " 2" for the second, …), and
 * whether the set is opened to rule work (its figures in-sample since).
 */
const numberedSets: [string, Blind, boolean][] = scoredSets.map(([name, set]) => [
  name === "blind" ? "" : ` ${name.slice("blind".length)}`,
  set,
  OPENED_BLIND_SETS.includes(name),
]);

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
    blindUnambiguous: withoutConfusion(blind.unambiguous),
    blindDangerous: blind.dangerous.total,
  },
  ...Object.fromEntries(scoredSets),
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
  mutatingCorrections,
};

const reportJson = `${JSON.stringify(report, null, 2)}\n`;
if (jsonTo !== undefined) writeFileSync(jsonTo, reportJson);
if (json) {
  process.stdout.write(reportJson);
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
    `correction-labelled texts of mutating tools the run stops (shipped model): ${mutatingCorrections.stops} of ${mutatingCorrections.texts} (${mutatingCorrections.byAsymmetry} by the asymmetry of harm)`,
    ...numberedSets.map(
      ([n, set, opened]) =>
        `BLIND SET${n} (${set.lines} lines, ${set.servers} ${n === "" ? "" : "further "}servers ${opened ? "no rule writer had read when it was first scored; opened to rule work since, so in-sample" : "no rule writer has read"}): ${fmt(set.unambiguous)} on unambiguous texts; ` +
        `dangerous decisions ${set.dangerous.total}; fingerprint recall ${set.fingerprints.recall.toFixed(3)}, ` +
        `false merges ${set.fingerprints.mergeRate.toFixed(3)}`,
    ),
    ...(closedSets.length === 0
      ? []
      : [`closed blind sets, not read (--opened-only): ${closedSets.join(", ")}`]),
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
  for (const [n, set] of numberedSets) out.push("", ...blindReport(set, `Blind set${n}`));
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

/** A blind set's lines of the text report: aggregates only (test/blind/README.md). */
function blindReport(blind: Blind, name: string): string[] {
  const width = Math.max(...LABELS.map((l) => l.length)) + 2;
  const pad = (v: string) => v.padStart(width);
  const table = (title: string, part: typeof blind.unambiguous) => [
    `${title} (rows = label, columns = predicted)`,
    `${"".padEnd(width)}${[...LABELS, "other"].map(pad).join("")}`,
    ...LABELS.map(
      (label) =>
        `${label.padEnd(width)}${[...LABELS, "other" as const]
          .map((p) => pad(String(part.confusion[label][p])))
          .join("")}`,
    ),
    `accuracy: ${fmt(part)}`,
  ];
  const d = blind.dangerous;
  const f = blind.fingerprints;
  return [
    `${name} (${blind.dir}: ${blind.lines} lines from ${blind.servers} servers; aggregates only, its lines are kept from rule work):`,
    ...table("Blind, non-ambiguous", blind.unambiguous).map((l) => `  ${l}`),
    `  the classification alone, before the asymmetry of harm on a write: ${fmt(blind.classifiedUnambiguous)} on unambiguous texts`,
    ...table("Blind, all (ambiguous scored against their label)", blind.all).map((l) => `  ${l}`),
    `  dangerous decisions: ${d.total} (stop retried ${d.personOnlyRetried}, mutating stop sent back as arguments ${d.mutatingStopAsArguments}, mutating write retried ${d.mutatingWriteRetried})`,
    `  dangerous decisions in the run of a host that keys no write (a write in doubt stops, not retried): ${d.asUnkeyedRun}`,
    `  dangerous decisions by the stage that made them: ${
      Object.entries(d.bySource)
        .map(([source, n]) => `${source} ${n}`)
        .join(", ") || "none"
    }`,
    `  legend: ${d.legend}`,
    ...(blind.consensus === null
      ? []
      : [
          `  where a second labeller agrees (${blind.consensus.agreedLines} lines labelled alike): ${fmt(blind.consensus.unambiguous)} on the lines both call unambiguous; dangerous decisions ${blind.consensus.dangerous}`,
        ]),
    `  decided by the learned last stage (non-ambiguous): ${blind.learnedStage.decided}, right ${blind.learnedStage.right} (the old default, correct_arguments, ${blind.learnedStage.defaultRight}; the run's default, a stop on a mutating tool, ${blind.learnedStage.runDefaultRight})`,
    `  blind lines quoted by the rule table or a rule test: ${blind.quotedByRuleWork.lines} (${blind.quotedByRuleWork.servers} servers; must be 0)`,
    `  fingerprints on ${f.samePairs + f.differentPairs} blind pairs: same-template recall ${f.sameMerged}/${f.samePairs} = ${f.recall.toFixed(3)}, different-template merges ${f.differentMerged}/${f.differentPairs} = ${f.mergeRate.toFixed(3)}`,
    ...f.perKind.map((k) => `    ${k.kind}: ${k.merged}/${k.pairs} merged`),
  ];
}
