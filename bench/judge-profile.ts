/**
 * Profile of judging one failure, function by function, over test/corpus/tool-errors.jsonl:
 * `matchBuiltinRules`, `normalizeText`, `fingerprint`, `redact` and `assessFailure` in µs per
 * failure (median of rounds), for recurring texts and for texts never seen before (a request id
 * appended), and failures judged per second by the loop of `benchDecisions`.
 *
 *   node --conditions=source --import tsx bench/judge-profile.ts [--bench]
 *   node --conditions=source --import tsx bench/judge-profile.ts --dump /tmp/judge.json
 *
 * `--dump FILE` writes, for every corpus text and for a few thousand generated texts (fixed seed),
 * what the rules, the normalizer, the redactor and the fingerprint make of it, so two versions of
 * them can be diffed for a change of behavior. `JUDGE_SRC=/dir` profiles or dumps another copy of
 * packages/core/src instead (`git archive HEAD packages/core/src | tar -x -C /tmp/head`, with
 * node_modules linked beside it). `--bench` also runs `benchDecisions` of bench/core.ts, which
 * always judges with packages/core/src.
 */
import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import { corpusTexts, DEFAULT_SEED, generatedTexts, toolErrors } from "./judge-texts.ts";
import { median } from "./stats.ts";

type Core = typeof import("../packages/core/src/index.ts") &
  typeof import("../packages/core/src/judge/index.ts");

/**
 * The core under test: packages/core/src, or with `JUDGE_SRC=/some/dir` another copy of it (say,
 * `git archive HEAD packages/core/src` unpacked), for a before/after comparison.
 */
async function loadCore(): Promise<{ src: string; core: Core }> {
  const src = process.env.JUDGE_SRC ?? new URL("../packages/core/src", import.meta.url).pathname;
  const root = await import(`${src}/index.ts`);
  const judge = await import(`${src}/judge/index.ts`);
  return { src, core: { ...root, ...judge } as Core };
}

async function dump(file: string): Promise<void> {
  const { src, core } = await loadCore();
  const { fingerprint, matchBuiltinRules, normalizeText, redact } = core;
  const inputs = [
    ...corpusTexts,
    ...generatedTexts(
      Number(process.env.JUDGE_SEED ?? DEFAULT_SEED),
      Number(process.env.JUDGE_SCALE ?? 1),
    ),
  ];
  const row = (t: string) => [
    t,
    matchBuiltinRules(t)?.reason ?? null,
    normalizeText(t),
    redact(t),
    redact(t, { emails: true }),
    redact(t, { maxLength: 10_000, emails: true }),
    fingerprint({ tool: "t", channel: "tool", code: -32602, text: t }),
  ];
  // In batches, each read three times: the three must agree (no state of one judgement leaks
  // into the next).
  const rows: unknown[][] = [];
  for (let at = 0; at < inputs.length; at += 200) {
    const batch = inputs.slice(at, at + 200);
    const first = batch.map(row);
    for (let pass = 0; pass < 2; pass++) {
      const again = JSON.stringify(batch.map(row));
      if (again !== JSON.stringify(first)) {
        throw new Error(`judge-profile: inputs ${at}.. read differently on pass ${pass + 2}`);
      }
    }
    rows.push(...first);
  }
  writeFileSync(file, `${JSON.stringify(rows, null, 1)}\n`);
  process.stderr.write(`judge-profile: wrote ${rows.length} inputs from ${src} to ${file}\n`);
}

// ---------------------------------------------------------------------------------------------
// Profile

/**
 * µs per call of `fn` over the corpus, median of rounds. `recurring`: the same texts every round
 * (a build with a memo of texts answers from it after the first). `unseen`: every round a new request id (a UUID)
 * is appended to each text, so no text was judged before.
 */
function perCall(
  label: string,
  rounds: number,
  fn: (text: string, i: number) => unknown,
): { recurring: number; unseen: number } {
  const texts = toolErrors.map((e) => e.text);
  const n = texts.length;
  let sink = 0;
  const measure = (round: (r: number) => readonly string[]) => {
    for (let r = 0; r < 5; r++) {
      const ts = round(r);
      for (let i = 0; i < n; i++) sink += fn(ts[i] as string, i) === undefined ? 0 : 1; // warm-up
    }
    const samples: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const ts = round(r);
      const t = performance.now();
      for (let i = 0; i < n; i++) sink += fn(ts[i] as string, i) === undefined ? 0 : 1;
      samples.push(((performance.now() - t) * 1000) / n);
    }
    return median(samples);
  };
  const recurring = measure(() => texts);
  const unseen = measure(() => texts.map((t) => `${t} (request ${randomUUID()})`));
  if (sink < 0) throw new Error("unreachable");
  process.stdout.write(
    `${label.padEnd(20)} ${recurring.toFixed(2).padStart(8)} µs recurring ${unseen.toFixed(2).padStart(8)} µs unseen\n`,
  );
  return { recurring, unseen };
}

async function profile(rounds: number): Promise<void> {
  const { src, core } = await loadCore();
  const {
    assessFailure,
    failureFromResult,
    fingerprint,
    loadPolicy,
    matchBuiltinRules,
    normalizeText,
    redact,
    resolveToolPolicy,
  } = core;
  process.stdout.write(`core: ${src}\n`);
  const policy = loadPolicy({});
  const { maxLength, emails, patterns } = policy.redaction;
  const tools = toolErrors.map((e) => resolveToolPolicy(policy, e.tool));
  perCall("matchBuiltinRules", rounds, (text) => matchBuiltinRules(text));
  perCall("normalizeText", rounds, (text) => normalizeText(text));
  perCall("fingerprint", rounds, (text) => fingerprint({ tool: "t", channel: "tool", text }));
  perCall("redact", rounds, (text) => redact(text, { maxLength, emails, patterns }));
  const judge = (text: string, i: number) =>
    assessFailure(failureFromResult({ content: [{ type: "text", text }], isError: true }), {
      policy,
      tool: tools[i] as (typeof tools)[number],
      effect: "read_only",
    });
  const us = perCall("assessFailure", rounds, judge);
  process.stdout.write(
    `assessFailure        ${Math.round(1e6 / us.recurring)} failures/s recurring, ${Math.round(1e6 / us.unseen)} unseen\n`,
  );
  // The loop of benchDecisions (bench/core.ts), on this core.
  const failures = toolErrors.map((e, i) => ({
    tool: tools[i] as (typeof tools)[number],
    failure: failureFromResult({ content: [{ type: "text", text: e.text }], isError: true }),
  }));
  const perSecond: number[] = [];
  let sink = 0;
  for (let r = 0; r < 20; r++) {
    const t = performance.now();
    for (const { tool, failure } of failures) {
      sink += assessFailure(failure, { policy, tool, effect: "read_only" }).fingerprint.length;
    }
    perSecond.push(failures.length / ((performance.now() - t) / 1000));
  }
  if (sink < 0) throw new Error("unreachable");
  process.stdout.write(`decisions loop       ${Math.round(median(perSecond))} failures/s\n`);
}

async function main(): Promise<void> {
  const at = process.argv.indexOf("--dump");
  if (at >= 0) {
    await dump(process.argv[at + 1] ?? "/tmp/judge.json");
    return;
  }
  await profile(Number(process.env.ROUNDS ?? 40));
  if (process.argv.includes("--bench")) {
    const { benchDecisions } = await import("./core.ts");
    for (let i = 0; i < 3; i++) {
      process.stdout.write(`benchDecisions       ${JSON.stringify(benchDecisions(20))}\n`);
    }
  }
}

await main();
