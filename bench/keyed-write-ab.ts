/**
 * The timing both Redis A/B benches share (bench/doubt-redis-ab.ts swaps core builds,
 * bench/redis-scripts-ab.ts swaps @governor/redis sources): short runs of one undeclared keyed
 * write each on a side's governor and store, sides taking turns in rounds of 100 runs, the order
 * alternating each round, the first 4 rounds a warm-up. The median µs per write of each side.
 */
import { performance } from "node:perf_hooks";
import type { Governor } from "@governor/core";
import { median } from "./stats.ts";

interface Side {
  readonly governor: Pick<Governor, "startRun">;
}

interface Timed {
  readonly side: Side;
  readonly times: number[];
  n: number;
}

const OK = { content: [{ type: "text", text: "paid" }] };

export async function timeKeyedWrites(
  ours: Side,
  base: Side,
): Promise<{ oursUsPerWrite: number; baseUsPerWrite: number; ratio: number; samples: number }> {
  const sides: [Timed, Timed] = [
    { side: ours, times: [], n: 0 },
    { side: base, times: [], n: 0 },
  ];
  for (let round = 0; round < 24; round++) {
    for (const s of round % 2 === 1 ? [sides[1], sides[0]] : sides) {
      for (let i = 0; i < 100; i++) {
        const run = s.side.governor.startRun();
        const started = performance.now();
        await run.call({ tool: "pay", args: { amount: s.n++ } }, async () => OK);
        if (round >= 4) s.times.push(performance.now() - started);
        run.end();
      }
    }
  }
  const oursUs = median(sides[0].times) * 1000;
  const baseUs = median(sides[1].times) * 1000;
  return {
    oursUsPerWrite: Math.round(oursUs),
    baseUsPerWrite: Math.round(baseUs),
    ratio: Number((oursUs / baseUs).toFixed(3)),
    samples: sides[0].times.length,
  };
}
