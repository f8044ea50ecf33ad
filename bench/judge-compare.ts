/**
 * Before/after of judging a failure, side by side in one process: the judging figures of
 * `pnpm bench` (`judge_vs_regex`, `failing_call_vs_judge`, `decisions_per_sec`, and
 * `judge_unseen_vs_regex`) measured on this tree and on another checkout of the repository
 * (`BASE=/dir`, with its own node_modules, e.g. `git archive <commit>` unpacked and linked),
 * in alternating rounds so both see the same machine state.
 *
 *   BASE=/tmp/judge-base node --expose-gc --conditions=source --import tsx bench/judge-compare.ts
 */
import type { Figure } from "./stats.ts";

type Benches = {
  benchJudgeVsRegex(rounds?: number): Figure;
  benchJudgeUnseenVsRegex?(rounds?: number): Figure;
  benchFailingCall(rounds?: number): Promise<Figure>;
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
for (let r = 0; r < rounds; r++) {
  for (const { name, path, core } of r % 2 === 0 ? trees : [...trees].reverse()) {
    add(name, "decisions_per_sec", core.benchDecisions(20));
    add(name, "judge_vs_regex", path.benchJudgeVsRegex(20));
    if (path.benchJudgeUnseenVsRegex !== undefined) {
      add(name, "judge_unseen_vs_regex", path.benchJudgeUnseenVsRegex(10));
    }
    add(name, "failing_call_vs_judge", await path.benchFailingCall(10));
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
