/**
 * Fingerprinting alone, in CPU µs per failure text, against its floor: `fingerprint` (normalize,
 * fold the values, hash) over the corpus texts of test/corpus/tool-errors.jsonl with a new request
 * id (a UUID) appended every round, as `judge_unseen_vs_regex` of `pnpm bench` reads them, side by
 * side with the hash every fingerprint computes whatever its design (SHA-256 of the JSON of its
 * parts, the raw text in place of the folded one). With GOVERNOR_BASE (a copy of another build
 * made by bench/snapshot-dist.sh), the base build's `fingerprint` is measured beside them, for a
 * before/after of a change to the fingerprint.
 *
 * Every round each function reads the same fresh texts, in an order that turns with the rounds;
 * CPU time (`process.cpuUsage`: a loaded machine's waits do not inflate it as they do wall time),
 * the median of the rounds for each, and the median of the per-round ratios to the hash floor
 * (and, with a base, this / base).
 *
 *   node --conditions=source --import tsx bench/fingerprint-cost.ts
 *   # before/after, on the built packages:
 *   git stash && pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base && git stash pop
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/fingerprint-cost.ts
 *
 * ROUNDS (default 200) sets the measured rounds; TEXTS=corpus reads the corpus texts as they are
 * (no request id appended; the fingerprint keeps no memo of texts, so they cost what unseen ones
 * of the same shape do).
 */
import { createHash, randomUUID } from "node:crypto";
import * as judge from "@governor/core/judge";
import { importBase } from "./base-build.ts";
import { toolErrors } from "./judge-texts.ts";
import { median } from "./stats.ts";

type Fn = (text: string) => string;

/** The hash a fingerprint of `text` computes, on the text as it is: what it cannot cost less than. */
const hashFloor: Fn = (text) =>
  createHash("sha256")
    .update(JSON.stringify(["t", "tool", null, text]))
    .digest("hex")
    .slice(0, 16);

const fingerprintOf =
  (j: Pick<typeof judge, "fingerprint">): Fn =>
  (text) =>
    j.fingerprint({ tool: "t", channel: "tool", text });

const fns: [name: string, fn: Fn][] = [
  ["hash floor (baseline)", hashFloor],
  ["fingerprint", fingerprintOf(judge)],
];
const base = process.env.GOVERNOR_BASE;
if (base !== undefined && base !== "") {
  const baseJudge = await importBase<typeof judge>(base, "packages/core/dist/judge/index.js");
  fns.push(["fingerprint (base)", fingerprintOf(baseJudge)]);
}

const ROUNDS = Number(process.env.ROUNDS ?? 200);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  throw new Error(`fingerprint-cost: ROUNDS must be a whole number of rounds, got ${ROUNDS}`);
}
const TEXTS = process.env.TEXTS ?? "unseen";
if (TEXTS !== "unseen" && TEXTS !== "corpus") {
  throw new Error(`fingerprint-cost: TEXTS is "unseen" (the default) or "corpus", got "${TEXTS}"`);
}
const WARMUP = 40;
let sink = 0;
const us: number[][] = fns.map(() => []);
const toFloor: number[][] = fns.map(() => []);
const toBase: number[] = [];
for (let r = 0; r < WARMUP + ROUNDS; r++) {
  const texts = toolErrors.map((row) =>
    TEXTS === "corpus" ? row.text : `${row.text} (request ${randomUUID()})`,
  );
  // Flat strings, as judging finds them.
  for (const text of texts) sink += text.charCodeAt(0);
  const per: number[] = [];
  for (let k = 0; k < fns.length; k++) {
    const at = (k + r) % fns.length;
    const fn = (fns[at] as [string, Fn])[1];
    const start = process.cpuUsage();
    for (const text of texts) sink += fn(text).length;
    const used = process.cpuUsage(start);
    per[at] = (used.user + used.system) / texts.length;
  }
  if (r < WARMUP) continue;
  for (let k = 0; k < fns.length; k++) {
    us[k]?.push(per[k] as number);
    toFloor[k]?.push((per[k] as number) / (per[0] as number));
  }
  if (fns.length === 3) toBase.push((per[1] as number) / (per[2] as number));
}
if (sink < 0) throw new Error("unreachable");

process.stdout.write(
  `${toolErrors.length} ${TEXTS} texts a round, ${ROUNDS} rounds${base ? `; base: ${base}` : ""}\n`,
);
process.stdout.write("CPU µs per text (median)   ratio to the hash floor (median of rounds)\n");
for (let k = 0; k < fns.length; k++) {
  const [name] = fns[k] as [string, Fn];
  process.stdout.write(
    `${name.padEnd(24)} ${median(us[k] as number[])
      .toFixed(2)
      .padStart(7)}   ${median(toFloor[k] as number[]).toFixed(2)}\n`,
  );
}
if (toBase.length > 0) {
  process.stdout.write(`fingerprint this / base: ${median(toBase).toFixed(3)}\n`);
}
