/**
 * How many unseen texts judging needs before it reaches its steady state: the corpus judged
 * `ROUNDS` times (default 60), each round with a new request id (a UUID) on every text, as
 * `judge_unseen_vs_regex` of `pnpm bench` judges them; prints each round's wall and CPU µs per
 * text. `pnpm bench` leaves out the rounds this shows to be warm-up (run-path.ts's
 * `UNSEEN_WARM_ROUNDS`).
 *
 *   pnpm build && node --import tsx bench/judge-warmup.ts
 */
import { randomUUID } from "node:crypto";
import { failureFromResult, loadPolicy } from "@governor/core";
import { assessFailure, resolveToolPolicy } from "@governor/core/judge";
import { toolErrors } from "./judge-texts.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 60);
const policy = loadPolicy({});
const tools = toolErrors.map((row) => resolveToolPolicy(policy, row.tool));
let sink = 0;
const rows: string[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const fresh = toolErrors.map(({ text }) =>
    failureFromResult({
      content: [{ type: "text", text: `${text} (request ${randomUUID()})` }],
      isError: true,
    }),
  );
  const cpu = process.cpuUsage();
  const start = performance.now();
  for (let i = 0; i < fresh.length; i++) {
    const failure = fresh[i] as (typeof fresh)[number];
    const tool = tools[i] as (typeof tools)[number];
    sink += assessFailure(failure, { policy, tool, effect: "read_only" }).fingerprint.length;
  }
  const wall = ((performance.now() - start) * 1000) / fresh.length;
  const used = process.cpuUsage(cpu);
  rows.push(
    `round ${round}: ${wall.toFixed(1)} µs wall, ${((used.user + used.system) / fresh.length).toFixed(1)} µs cpu`,
  );
}
if (sink < 0) throw new Error("unreachable");
console.log(`${toolErrors.length} texts a round\n${rows.join("\n")}`);
