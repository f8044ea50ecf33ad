/**
 * Fingerprints on the hard pairs of test/corpus/fingerprint-pairs.jsonl (ids `hard-*`, made by
 * scripts/fingerprint-hard-pairs.ts from corpus templates, issue 27.5): the same template with a
 * word, slug, list or duration value, or wrapped in a JSON error body, must share a fingerprint
 * (goal: recall >= 0.90), and another template of the same server must not (merges <= 0.01).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { failureFromResult } from "@governor/core";
import { fingerprint } from "@governor/core/judge";

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

export interface HardPairsReport {
  readonly samePairs: number;
  readonly sameMerged: number;
  readonly recall: number;
  readonly differentPairs: number;
  readonly differentMerged: number;
  readonly mergeRate: number;
  readonly byKind: Record<string, { pairs: number; merged: number }>;
}

const print = (tool: string, text: string, args?: Readonly<Record<string, unknown>>) => {
  const f = failureFromResult({ content: [{ type: "text", text }], isError: true });
  return fingerprint({
    tool,
    channel: f.channel,
    text: f.text,
    ...(f.code !== undefined && { code: f.code }),
    ...(args !== undefined && { args }),
  });
};

export function hardPairsReport(dir: string): HardPairsReport {
  const pairs = readFileSync(join(dir, "fingerprint-pairs.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Pair)
    .filter((p) => p.id.startsWith("hard-"));
  const byKind: Record<string, { pairs: number; merged: number }> = {};
  let sameMerged = 0;
  let differentMerged = 0;
  for (const p of pairs) {
    const merged = print(p.tool, p.a, p.argsA) === print(p.tool, p.b, p.argsB);
    const k = byKind[p.kind] ?? { pairs: 0, merged: 0 };
    byKind[p.kind] = k;
    k.pairs++;
    if (merged) k.merged++;
    if (merged && p.same) sameMerged++;
    if (merged && !p.same) differentMerged++;
  }
  const samePairs = pairs.filter((p) => p.same).length;
  const differentPairs = pairs.length - samePairs;
  return {
    samePairs,
    sameMerged,
    recall: samePairs === 0 ? 0 : sameMerged / samePairs,
    differentPairs,
    differentMerged,
    mergeRate: differentPairs === 0 ? 0 : differentMerged / differentPairs,
    byKind,
  };
}

export function formatHardPairs(r: HardPairsReport): string[] {
  const kinds = Object.entries(r.byKind)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v.merged}/${v.pairs}`)
    .join(", ");
  return [
    `FINGERPRINTS, hard pairs from corpus templates (goal recall >= 0.90, merges <= 0.01): recall ${r.sameMerged}/${r.samePairs} = ${r.recall.toFixed(3)}, merges ${r.differentMerged}/${r.differentPairs} = ${r.mergeRate.toFixed(3)}`,
    `  merged by kind: ${kinds}`,
  ];
}
