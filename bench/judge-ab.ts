/**
 * Judging failure texts never seen before, two builds side by side in one process: this
 * checkout's built `@governor/core` against a copy of another build's (made by
 * bench/snapshot-dist.sh). Measured: `matchBuiltinRules`, `normalizeText`, `redact` (the policy's
 * default settings), `assessFailure`, and `assessFailure` of a write whose call (arguments and
 * schema) the run knows (`assessWithCall`), over the corpus texts of test/corpus/tool-errors.jsonl
 * with a new request id (a UUID) appended every round, as `judge_unseen_vs_regex` of `pnpm bench`
 * judges them. Every round both builds judge the same fresh texts (which neither has seen, a build
 * with a memo of texts included), the order alternating; the figure is CPU time (`process.cpuUsage`, which a
 * loaded machine's waits do not inflate as they do wall time) in µs per text, the median of the
 * rounds for each build, and the median of the per-round ratios this / base.
 *
 *   git stash && pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base && git stash pop
 *   pnpm build && GOVERNOR_BASE=/tmp/governor-base node --import tsx bench/judge-ab.ts
 *
 * ROUNDS (default 100) sets the measured rounds per function.
 */
import { randomUUID } from "node:crypto";
import type * as core from "@governor/core";
import { type Build, judgeBuilds } from "./judge-builds.ts";
import { toolErrors } from "./judge-texts.ts";
import { median } from "./stats.ts";

/** The corpus tool errors (test/corpus/tool-errors.jsonl). */
const rows = toolErrors;
const { base, builds } = await judgeBuilds("bench/judge-ab.ts");
const ROUNDS = Number(process.env.ROUNDS ?? 100);
const WARMUP = 5;
let sink = 0;

process.stdout.write(`base: ${base}\nµs per unseen text, CPU time: base, this, paired ratio\n`);
for (const name of Object.keys(builds[0].fns)) {
  const us: [number[], number[]] = [[], []];
  const ratios: number[] = [];
  for (let r = 0; r < WARMUP + ROUNDS; r++) {
    const texts = rows.map((row) => `${row.text} (request ${randomUUID()})`);
    const per = [0, 0];
    for (const k of r % 2 === 0 ? [0, 1] : [1, 0]) {
      const { fns, failureFromResult } = builds[k] as Build;
      const fn = fns[name as keyof Build["fns"]];
      const failures = texts.map((text) =>
        failureFromResult({ content: [{ type: "text", text }], isError: true }),
      );
      const start = process.cpuUsage();
      for (let i = 0; i < texts.length; i++) {
        sink += fn(texts[i] as string, i, failures[i] as core.Failure) === undefined ? 0 : 1;
      }
      const used = process.cpuUsage(start);
      per[k] = (used.user + used.system) / texts.length;
    }
    if (r < WARMUP) continue;
    us[0].push(per[0] as number);
    us[1].push(per[1] as number);
    ratios.push((per[1] as number) / (per[0] as number));
  }
  process.stdout.write(
    `${name.padEnd(18)} ${median(us[0]).toFixed(2).padStart(7)} ${median(us[1]).toFixed(2).padStart(7)}   ${median(ratios).toFixed(3)}\n`,
  );
}
if (sink < 0) throw new Error("unreachable");
