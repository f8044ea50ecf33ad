/**
 * Differential fuzz of redaction: this checkout's built `redact` (and the model-facing message of
 * `failureFromResult` + `assessFailure`, whose text blocks are joined by `joinBlocks`) against a
 * base build's, on seeded adversarial texts: stack frames of every runtime stack-frames.ts knows,
 * credentials named in the languages of named-values.ts, and mutants of both. The texts are
 * packages/core/src/judge/redact/adversarial-texts.support.ts, which prefilter-gates.test.ts also
 * reads.
 *
 * Run (after `pnpm --silent build`, with a base copy made by bench/snapshot-dist.sh):
 *   GOVERNOR_BASE=/tmp/h3-governor-base node --import tsx scripts/fuzz-redact-diff.ts [count] [seed]
 * It prints each difference (at most 20 per kind): `LEAK` where this build keeps text the base
 * removed, `MORE` where it removes text the base kept; the exit code is 1 on any LEAK.
 */
import { baseDir, importBase } from "../bench/base-build.ts";
import { adversarialTexts } from "../packages/core/src/judge/redact/adversarial-texts.support.ts";

interface Judge {
  redact: (text: string, options?: { maxLength?: number }) => string;
  assessFailure: (failure: unknown, options: unknown) => { message: string | null };
  resolveToolPolicy: (policy: unknown, tool: string) => unknown;
  policySchema?: unknown;
}
interface Core {
  failureFromResult: (result: unknown) => unknown;
  loadPolicy: (input?: unknown) => unknown;
}

const base = baseDir("fuzz-redact-diff");
const newJudge = await importBase<Judge>(process.cwd(), "packages/core/dist/judge/index.js");
const newCore = await importBase<Core>(process.cwd(), "packages/core/dist/index.js");
const oldJudge = await importBase<Judge>(base, "packages/core/dist/judge/index.js");
const oldCore = await importBase<Core>(base, "packages/core/dist/index.js");

const COUNT = Number(process.argv[2] ?? 20000);
// The seed's texts, and its stream for the one choice made here (how every fourth text is split
// into the blocks of a tool's answer): the same count and seed compare the same texts.
const { rand, chance, next } = adversarialTexts(Number(process.argv[3] ?? 1));

// ---------------------------------------------------------------- compare
const policyNew = newCore.loadPolicy({});
const policyOld = oldCore.loadPolicy({});
const toolNew = newJudge.resolveToolPolicy(policyNew, "search_notes");
const toolOld = oldJudge.resolveToolPolicy(policyOld, "search_notes");

function blocks(text: string): string[] {
  if (chance(0.5)) return [text];
  const out: string[] = [];
  let rest = text;
  while (rest.length > 0 && out.length < 4) {
    const at = 1 + Math.floor(rand() * rest.length);
    out.push(rest.slice(0, at));
    rest = rest.slice(at);
  }
  if (rest.length > 0) out.push(rest);
  return out;
}

function message(
  judge: Judge,
  core: Core,
  policy: unknown,
  tool: unknown,
  parts: string[],
): string {
  const failure = core.failureFromResult({
    isError: true,
    content: parts.map((text) => ({ type: "text", text })),
  });
  return judge.assessFailure(failure, { policy, tool, effect: "read_only" }).message ?? "<host>";
}

/** Words of `kept` outside placeholders (3+ characters of letters, digits, `_./:#@-`) not in `other`. */
function keptWords(kept: string, other: string): string[] {
  // Placeholders (`[redacted]`, `[path]`) are no kept text.
  const words = kept.replace(/\[[a-z ]{1,20}\]/g, " ").match(/[\p{L}\p{N}_./:#@\\-]{3,}/gu) ?? [];
  // A word with a letter and a digit (every value the generators write has both; a name does not):
  // a kept name the other swallowed with a value (a value running on over a JSON \\n) is none.
  return words.filter((w) => /\p{L}/u.test(w) && /\d/.test(w) && !other.includes(w));
}

const shown = { LEAK: 0, MORE: 0 };
const total = { LEAK: 0, MORE: 0, texts: 0, families: {} as Record<string, number> };
function report(kind: "LEAK" | "MORE", via: string, text: string, now: string, was: string): void {
  total[kind]++;
  if (shown[kind]++ >= 20) return;
  console.log(
    `${kind} (${via})\n  text: ${JSON.stringify(text)}\n  new:  ${JSON.stringify(now)}\n  base: ${JSON.stringify(was)}`,
  );
}

for (let i = 0; i < COUNT; i++) {
  const { family, text } = next();
  total.texts++;
  total.families[family] = (total.families[family] ?? 0) + 1;
  const now = newJudge.redact(text);
  const was = oldJudge.redact(text);
  if (now !== was) {
    // The new output keeps a word the base removed: a leak.
    if (keptWords(now, was).length > 0) report("LEAK", "redact", text, now, was);
    else report("MORE", "redact", text, now, was);
  }
  if (i % 4 === 0) {
    const parts = blocks(text);
    const m = message(newJudge, newCore, policyNew, toolNew, parts);
    const o = message(oldJudge, oldCore, policyOld, toolOld, parts);
    if (m !== o) {
      if (keptWords(m, o).length > 0)
        report("LEAK", `message ${JSON.stringify(parts)}`, text, m, o);
      else report("MORE", `message ${JSON.stringify(parts)}`, text, m, o);
    }
  }
}
console.log(JSON.stringify(total));
process.exitCode = total.LEAK > 0 ? 1 : 0;
