/**
 * Differential check of the judge: this checkout's `@governor/core` against a copy of another
 * build's (made by bench/snapshot-dist.sh), in one process, over the corpus and generated texts
 * (bench/judge-texts.ts; by default 16 units of scale, about 105,000 texts). For every text both
 * builds must give the same `matchBuiltinRules` (the rule's place in the table), `normalizeText`,
 * `redact` (five sets of options, sensitive values among them), `fingerprint` (two tools, codes
 * and channels) and `assessFailure` (the whole assessment, as JSON). This checkout reads each text
 * three times (a build with a memo of texts answers from it the third time): all three must equal
 * the base.
 * A change that must not change behaviour (a faster normalizer, redactor or rule scan) runs this
 * before it lands. Exits 1 on the first differences (up to 10 printed).
 *
 *   git stash && pnpm build && bash bench/snapshot-dist.sh /tmp/governor-base && git stash pop
 *   GOVERNOR_BASE=/tmp/governor-base node --conditions=source --import tsx bench/judge-diff.ts
 *
 * `JUDGE_SEED` (default 20240601) and `JUDGE_SCALE` (default 16) vary the generated texts; without
 * `--conditions=source` this checkout's build is compared instead of its sources.
 */
import * as core from "@governor/core";
import * as judge from "@governor/core/judge";
import { baseDir, importBase } from "./base-build.ts";
import { corpusTexts, DEFAULT_SEED, generatedTexts, toolErrors } from "./judge-texts.ts";

const base = baseDir("bench/judge-diff.ts");
const baseCore = await importBase<typeof core>(base, "packages/core/dist/index.js");
const baseJudge = await importBase<typeof judge>(base, "packages/core/dist/judge/index.js");

const seed = Number(process.env.JUDGE_SEED ?? DEFAULT_SEED);
const scale = Number(process.env.JUDGE_SCALE ?? 16);
const texts = [...corpusTexts, ...generatedTexts(seed, scale)];

const TOOLS = [...new Set(toolErrors.map((e) => e.tool))];
const EFFECTS = ["read_only", "mutating", "idempotent"] as const;

/** What one build makes of text `i`, as one string per function. */
function reader(c: typeof core, j: typeof judge): (text: string, i: number) => string[] {
  const policy = c.loadPolicy({});
  const tools = TOOLS.map((tool) => j.resolveToolPolicy(policy, tool));
  const { maxLength, emails, patterns } = policy.redaction;
  return (text, i) => {
    const tool = tools[i % tools.length] as (typeof tools)[number];
    // A word of the text as a sensitive value, when it has one of four characters or more.
    const word = text.split(/\s+/).find((w) => w.length >= 4);
    const failure =
      i % 3 === 2
        ? c.failureFromError({ code: i % 2 ? -32602 : -32603, message: text }, { jsonRpc: true })
        : c.failureFromResult({ content: [{ type: "text", text }], isError: true });
    const rule = j.matchBuiltinRules(text);
    return [
      String(rule === undefined ? -1 : j.BUILTIN_RULES.indexOf(rule)),
      j.normalizeText(text),
      j.redact(text),
      j.redact(text, { emails: true }),
      j.redact(text, { maxLength: 10_000, emails: true }),
      j.redact(text, { maxLength, emails, patterns }),
      j.redact(text, { maxLength, emails, patterns, sensitiveValues: word ? [word] : [] }),
      j.fingerprint({ tool: "t", channel: "tool", code: -32602, text }),
      j.fingerprint({ tool: tool.tool, channel: "protocol", text }),
      JSON.stringify(
        j.assessFailure(failure, {
          policy,
          tool,
          effect: EFFECTS[i % EFFECTS.length] as (typeof EFFECTS)[number],
        }),
      ),
    ];
  };
}

const NAMES = [
  "matchBuiltinRules",
  "normalizeText",
  "redact()",
  "redact(emails)",
  "redact(10k, emails)",
  "redact(policy)",
  "redact(sensitive)",
  "fingerprint(tool)",
  "fingerprint(protocol)",
  "assessFailure",
];

const readBase = reader(baseCore, baseJudge);
const readThis = reader(core, judge);
let differences = 0;
const started = performance.now();
for (let i = 0; i < texts.length && differences < 10; i++) {
  const text = texts[i] as string;
  const want = readBase(text, i);
  for (let pass = 1; pass <= 3; pass++) {
    const got = readThis(text, i);
    for (let k = 0; k < want.length; k++) {
      if (got[k] === want[k]) continue;
      differences++;
      process.stdout.write(
        `DIFF text ${i}, ${NAMES[k]}, pass ${pass}\n  text: ${JSON.stringify(text)}\n  base: ${JSON.stringify(want[k])}\n  this: ${JSON.stringify(got[k])}\n`,
      );
    }
  }
}
const seconds = ((performance.now() - started) / 1000).toFixed(0);
process.stdout.write(
  `judge-diff: ${texts.length} texts (seed ${seed}, scale ${scale}), ${NAMES.length} results each, against ${base}: ${differences === 0 ? "identical" : `${differences} differences`} (${seconds} s)\n`,
);
if (differences > 0) process.exit(1);
