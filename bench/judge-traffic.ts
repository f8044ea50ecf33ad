/**
 * Judging a realistic stream of failure texts, two builds side by side in one process: this
 * checkout's built `@governor/core` against a copy of another build's (bench/snapshot-dist.sh).
 * Made to tell whether the judge's memo of recent texts (judge/text-memo.ts, until issue 31
 * removed it) paid on real traffic, where a text seen twice is rare: a build with the memo against
 * one without (main's build before issue 31 against this one, or against a copy of it whose
 * judge/text-facts.js is a memo that keeps nothing).
 *
 * The stream: each failure is, with probability REPEAT, the exact text of one of the last 32
 * failures (a retried call answered the same way, a tool failing alike in the next run), else a
 * corpus text (test/corpus/tool-errors.jsonl, in random order) with a new request id (a UUID):
 * a text never judged before. REPEAT 0 is the all-unique case; `replay` judges the whole corpus
 * again every round (every text recurs: the memo's best case, as `judge_vs_regex` of `pnpm bench`
 * reads it). The stream is the same for both builds (fixed seed), 272 failures a round, the order
 * of the builds alternating; each build keeps its own memos across rounds, as a process does.
 * Measured: `assessFailure` (the policy's defaults, a read-only tool) and `redact` (the policy's
 * redaction settings), CPU time (`process.cpuUsage`) in µs per failure, the median of the rounds
 * for each build, and the median of the per-round ratios this / base.
 *
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/judge-traffic.ts
 *
 * ROUNDS (default 60) sets the measured rounds per mix; REPEATS (default `0,0.05,0.2,0.5,replay`)
 * the mixes.
 */
import { randomUUID } from "node:crypto";
import type * as core from "@governor/core";
import { seededRandom } from "../packages/cli/src/demo-governed.ts";
import { type Build, type Fn, judgeBuilds } from "./judge-builds.ts";
import { toolErrors } from "./judge-texts.ts";
import { median } from "./stats.ts";

const { base, builds } = await judgeBuilds("bench/judge-traffic.ts");
const ROUNDS = Number(process.env.ROUNDS ?? 60);
const WARMUP = 20;
const PER_ROUND = toolErrors.length;
/** How far back a repeated text is taken from. */
const WINDOW = 32;
const MIXES = (process.env.REPEATS ?? "0,0.05,0.2,0.5,replay").split(",");

/** A failure of the stream: the corpus row it comes from and its text. */
type Item = { readonly row: number; readonly text: string };

/** Rounds of the stream for a repeat rate (see the file's comment). */
function stream(mix: string): () => Item[] {
  if (mix === "replay") {
    const items = toolErrors.map((row, i) => ({ row: i, text: row.text }));
    return () => items;
  }
  const repeat = Number(mix);
  if (!(repeat >= 0 && repeat <= 1)) {
    throw new Error(
      `bench/judge-traffic.ts: REPEATS takes rates from 0 to 1 or "replay", got ${mix}`,
    );
  }
  const next = seededRandom(20261205);
  const recent: Item[] = [];
  return () => {
    const items: Item[] = [];
    for (let i = 0; i < PER_ROUND; i++) {
      let item: Item;
      if (recent.length > 0 && next() < repeat) {
        // A copy, as a text read again from a server's answer is a string of its own.
        const again = recent[Math.floor(next() * recent.length)] as Item;
        item = { row: again.row, text: Buffer.from(again.text).toString() };
      } else {
        const row = Math.floor(next() * toolErrors.length);
        item = { row, text: `${toolErrors[row]?.text} (request ${randomUUID()})` };
      }
      items.push(item);
      recent.push(item);
      if (recent.length > WINDOW) recent.shift();
    }
    return items;
  };
}

/** What is measured of each build. */
const MEASURED = ["assessFailure", "redact"] as const;
let sink = 0;

process.stdout.write(
  `base: ${base}\nµs per failure, CPU time: base, this, paired ratio this/base (${ROUNDS} rounds of ${PER_ROUND})\n`,
);
for (const mix of MIXES) {
  for (const name of MEASURED) {
    const nextRound = stream(mix);
    const us: [number[], number[]] = [[], []];
    const ratios: number[] = [];
    for (let r = 0; r < WARMUP + ROUNDS; r++) {
      const items = nextRound();
      const per = [0, 0];
      for (const k of r % 2 === 0 ? [0, 1] : [1, 0]) {
        const { fns, failureFromResult } = builds[k] as Build;
        const fn: Fn = fns[name];
        // Each build reads failures it made itself, as a call's result would give them.
        const failures = items.map(({ text }) =>
          failureFromResult({ content: [{ type: "text", text }], isError: true }),
        );
        const start = process.cpuUsage();
        for (let i = 0; i < items.length; i++) {
          const { text, row } = items[i] as Item;
          sink += fn(text, row, failures[i] as core.Failure) === undefined ? 0 : 1;
        }
        const used = process.cpuUsage(start);
        per[k] = (used.user + used.system) / items.length;
      }
      if (r < WARMUP) continue;
      us[0].push(per[0] as number);
      us[1].push(per[1] as number);
      ratios.push((per[1] as number) / (per[0] as number));
    }
    const label = mix === "replay" ? "replay" : `repeat ${mix}`;
    process.stdout.write(
      `${label.padEnd(12)} ${name.padEnd(14)} ${median(us[0]).toFixed(2).padStart(7)} ${median(us[1]).toFixed(2).padStart(7)}   ${median(ratios).toFixed(3)}\n`,
    );
  }
}
if (sink < 0) throw new Error("unreachable");
