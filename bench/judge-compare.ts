/**
 * Before/after of judging a failure, side by side in one process: the judging figures of
 * `pnpm bench` (`judge_vs_regex`, `failing_call_vs_judge`, `decisions_per_sec`, and
 * `judge_unseen_vs_regex`) measured on this tree and on another checkout of the repository
 * (`BASE=/dir`, with its own node_modules, e.g. `git archive <commit>` unpacked and linked),
 * in alternating rounds so both see the same machine state; with `failing_call_unseen_vs_judge_unseen`
 * and the CPU-time reading of `judge_unseen_vs_regex` where the tree has them. ROUNDS (default 3)
 * rounds; ONLY (a comma-separated list of figures) to measure some.
 *
 *   BASE=/tmp/judge-base node --expose-gc --conditions=source --import tsx bench/judge-compare.ts
 *   # the built packages, as `pnpm bench` reads them (both trees built):
 *   BASE=/tmp/judge-base node --expose-gc --import tsx bench/judge-compare.ts
 */
import type { Figure } from "./stats.ts";

type Benches = {
  benchJudgeVsRegex(rounds?: number): Figure;
  benchJudgeUnseenVsRegex?(rounds?: number): Figure;
  benchJudgeUnseenBoth?(rounds?: number): { wall: Figure; cpu: Figure };
  benchFailingCall(rounds?: number): Promise<Figure>;
  benchFailingCallUnseen?(rounds?: number): Promise<Figure>;
};
type Core = { benchDecisions(rounds?: number): Figure };

const base = process.env.BASE;
if (base === undefined) throw new Error("judge-compare: set BASE to the other checkout");
const trees: { name: string; path: Benches; core: Core }[] = [
  {
    name: "base",
    path: (await import(`${base}/bench/run-path.ts`)) as Benches,
    core: (await import(`${base}/bench/core.ts`)) as Core,
  },
  {
    name: "this",
    path: (await import("./run-path.ts")) as Benches,
    core: (await import("./core.ts")) as Core,
  },
];
const rounds = Number(process.env.ROUNDS ?? 3);
const out: Record<string, Record<string, Figure[]>> = {};
const add = (tree: string, key: string, f: Figure) => {
  const figures = out[tree] ?? {};
  out[tree] = figures;
  const list = figures[key] ?? [];
  list.push(f);
  figures[key] = list;
  process.stderr.write(`${tree.padEnd(5)} ${key.padEnd(22)} ${JSON.stringify(f)}\n`);
};
/** ONLY: a comma-separated list of the figures to measure (default: all). */
const only = process.env.ONLY?.split(",");
const wanted = (key: string) => only === undefined || only.includes(key);
for (let r = 0; r < rounds; r++) {
  for (const { name, path, core } of r % 2 === 0 ? trees : [...trees].reverse()) {
    if (wanted("decisions_per_sec")) add(name, "decisions_per_sec", core.benchDecisions(20));
    if (wanted("judge_vs_regex")) add(name, "judge_vs_regex", path.benchJudgeVsRegex(20));
    if (path.benchJudgeUnseenBoth !== undefined && wanted("judge_unseen_vs_regex")) {
      const both = path.benchJudgeUnseenBoth(10);
      add(name, "judge_unseen_vs_regex", both.wall);
      add(name, "judge_unseen_vs_regex_cpu", both.cpu);
    } else if (path.benchJudgeUnseenVsRegex !== undefined && wanted("judge_unseen_vs_regex")) {
      add(name, "judge_unseen_vs_regex", path.benchJudgeUnseenVsRegex(10));
    }
    if (wanted("failing_call_vs_judge")) {
      add(name, "failing_call_vs_judge", await path.benchFailingCall(10));
    }
    if (
      path.benchFailingCallUnseen !== undefined &&
      wanted("failing_call_unseen_vs_judge_unseen")
    ) {
      add(name, "failing_call_unseen_vs_judge_unseen", await path.benchFailingCallUnseen(10));
    }
  }
}
// The median over the rounds of each figure's value and ratio, per tree.
for (const [tree, figures] of Object.entries(out)) {
  for (const [key, list] of Object.entries(figures)) {
    const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    process.stderr.write(
      `median ${tree.padEnd(5)} ${key.padEnd(36)} value ${mid(list.map((f) => f.value))} ratio ${mid(list.map((f) => f.ratio ?? Number.NaN))}\n`,
    );
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
