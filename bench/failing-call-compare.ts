/**
 * Before/after of a failing `run.call` in a fresh run, side by side in one process: this tree's
 * built `@governor/core` and another checkout's (`BASE=/dir`, built, with its own node_modules,
 * e.g. `git archive <commit>` unpacked, `pnpm install --offline`, `pnpm build`). The same shape as
 * `failing_call_vs_judge` in `pnpm bench` (bench/run-path.ts): per corpus text, start a run, one
 * call whose result is that failure (one attempt), end the run; then judge the same failures with
 * `assessFailure`. Each pass makes a fresh governor per tree and runs 12 warm rounds first; the
 * trees take turns every round (the order flipped each round), so both see the same machine.
 *
 * Per tree, medians over the measured rounds of the last pass:
 * - `call_cpu_us`: process CPU time per failing call (user + system; steadier than wall time on a
 *   shared machine), and `call_wall_us`;
 * - `judge_cpu_us`: CPU time per `assessFailure` of the same failures, and the ratio of the two;
 * - `call_bytes`: bytes allocated per failing call (`MODE=alloc`: a separate run, as the GC
 *   profiler slows the calls it measures).
 *
 *   BASE=/tmp/base node --expose-gc --import tsx bench/failing-call-compare.ts
 *   BASE=/tmp/base MODE=alloc node --expose-gc --import tsx bench/failing-call-compare.ts
 *
 * ROUNDS (default 40) measured rounds and PASSES (default 2) passes.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { GCProfiler } from "node:v8";

type Core = typeof import("@governor/core");
type Judge = typeof import("@governor/core/judge");

const base = process.env.BASE;
if (base === undefined) throw new Error("failing-call-compare: set BASE to the other checkout");
const here = fileURLToPath(new URL("..", import.meta.url));
const trees: { name: string; core: Core; judge: Judge }[] = [];
for (const [name, root] of [
  ["base", base],
  ["this", here],
] as const) {
  const dist = `${root}/packages/core/dist`;
  trees.push({
    name,
    core: (await import(`${dist}/index.js`)) as Core,
    judge: (await import(`${dist}/judge/index.js`)) as Judge,
  });
}

const corpus = readFileSync(new URL("../test/corpus/tool-errors.jsonl", import.meta.url), "utf8")
  .trim()
  .split("\n")
  .map((line) => JSON.parse(line) as { tool: string; text: string });
const ROUNDS = Number(process.env.ROUNDS ?? 40);
const PASSES = Number(process.env.PASSES ?? 2);
const WARM = 12;
const alloc = process.env.MODE === "alloc";

function setup({ core, judge }: { core: Core; judge: Judge }) {
  const policy = core.loadPolicy({});
  const failures = corpus.map((e) => ({
    tool: judge.resolveToolPolicy(policy, e.tool),
    failure: core.failureFromResult({ content: [{ type: "text", text: e.text }], isError: true }),
  }));
  const governor = core.createGovernor(
    { defaults: { effect: "read_only", retry: { attempts: 1 } } },
    { metrics: false, onHostError: () => undefined },
  );
  const results = corpus.map(({ text }) => ({ content: [{ type: "text", text }], isError: true }));
  return { policy, failures, governor, results };
}

let sink = 0;
async function failingCalls(x: ReturnType<typeof setup>): Promise<void> {
  for (let i = 0; i < corpus.length; i++) {
    const run = x.governor.startRun();
    const outcome = await run.call(
      { tool: corpus[i]?.tool ?? "t", args: { i } },
      async () => x.results[i],
    );
    sink += outcome.kind.length;
    run.end();
  }
}

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[sorted.length >> 1] ?? Number.NaN;
};

/** Bytes allocated while `body` runs (as bench/run-path.ts's allocatedPerCall counts them). */
async function allocated(body: () => Promise<void>): Promise<number> {
  (globalThis as { gc?: () => void }).gc?.();
  const profiler = new GCProfiler();
  const before = process.memoryUsage().heapUsed;
  profiler.start();
  await body();
  const after = process.memoryUsage().heapUsed;
  const stats = profiler.stop();
  let freed = 0;
  for (const s of stats?.statistics ?? []) {
    freed += s.beforeGC.heapStatistics.usedHeapSize - s.afterGC.heapStatistics.usedHeapSize;
  }
  return after - before + freed;
}

const figures = new Map(
  trees.map((t) => [t.name, { call: [] as number[], wall: [] as number[], judge: [] as number[] }]),
);
for (let pass = 0; pass < PASSES; pass++) {
  const states = trees.map((t) => ({ tree: t, x: setup(t) }));
  for (let r = 0; r < WARM + ROUNDS; r++) {
    for (const { tree, x } of r % 2 === 0 ? states : [...states].reverse()) {
      const n = corpus.length;
      const c = cpu();
      const w = performance.now();
      let bytes = 0;
      if (alloc) bytes = await allocated(() => failingCalls(x));
      else await failingCalls(x);
      const callCpu = (cpu() - c) / n;
      const wall = ((performance.now() - w) * 1000) / n;
      const j = cpu();
      for (const { tool, failure } of x.failures) {
        sink += tree.judge.assessFailure(failure, { policy: x.policy, tool, effect: "read_only" })
          .fingerprint.length;
      }
      const judgeCpu = (cpu() - j) / n;
      if (pass === PASSES - 1 && r >= WARM) {
        const f = figures.get(tree.name);
        f?.call.push(alloc ? bytes / n : callCpu);
        f?.wall.push(wall);
        f?.judge.push(judgeCpu);
      }
    }
  }
}
if (sink < 0) throw new Error("unreachable");
const out: Record<string, Record<string, number>> = {};
for (const [name, f] of figures) {
  out[name] = alloc
    ? { call_bytes: Math.round(median(f.call)) }
    : {
        call_cpu_us: Number(median(f.call).toFixed(2)),
        call_wall_us: Number(median(f.wall).toFixed(2)),
        judge_cpu_us: Number(median(f.judge).toFixed(2)),
        ratio: Number((median(f.call) / median(f.judge)).toFixed(2)),
      };
}
process.stdout.write(`${JSON.stringify(out)}\n`);
