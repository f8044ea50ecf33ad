/**
 * Which parts of the rule work of issue 27 items 2-3 carry from one set to another: each part
 * (component) turned off in turn, on the development sets (test/blind … test/blind7 and the
 * corpus), and a leave-one-set-out selection over them.
 *
 * Components: `A` a retry read from a generic word (TextRule.weak) is not repeated on a mutating
 * tool (stopsGuessedWrite); `B` a generic word yields to a specific phrasing; `P1` … `P13` the
 * families of person-only cues added with them (found by a phrase of their pattern, FAMILIES).
 * For each component and set: the right decisions on unambiguous lines and the dangerous decisions
 * (test/blind/README.md) it adds, full build minus the build without it. Leave one set out: a
 * component is kept for a held-out blind set only when, over the other six blind sets and the
 * corpus, it gains (right lines minus twice the dangerous decisions > 0); the held-out set is then
 * scored with the kept components only (one process per set).
 *
 * The held-out sets (test/blind8 and later) are never read.
 *
 * Usage: node --conditions=source --import tsx scripts/rule-ablation.ts
 *   (--off=A,P4 prints one configuration's per-set figures as JSON; --always-off=C1,C2 measures
 *   everything as if those parts were never written: the figures before them)
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { failureFromResult, loadPolicy } from "@governor/core";
import {
  type Classification,
  classify,
  resolveToolPolicy,
  stopsGuessedWrite,
} from "@governor/core/judge";
import {
  BUILTIN_RULES,
  explainBuiltinMatch,
  type TextRule,
} from "../packages/core/src/judge/rules.ts";
import type { TextModel } from "../packages/core/src/judge/text-model.ts";
import { lineToolPolicy } from "./eval-decided.ts";

const DEV_SETS = ["blind", "blind2", "blind3", "blind4", "blind5", "blind6", "blind7"] as const;
const CORPUS = ["tool-errors", "unseen-tool-errors"] as const;
const SETS = [...DEV_SETS, ...CORPUS];

/** Each family of person-only cues, by a phrase of its pattern's source. */
const FAMILIES: Record<string, string> = {
  P1: "(?:incorrect|invalid|wrong|bad) (?:username",
  P2: "(?:ensure|make sure|check) (?:that )?(?:your|the)",
  P3: "\\bplan limit\\b",
  P4: "(?:ask|prompt|inform|tell|notify|check with|confirm with|consult) (?:the )?(?:end",
  P5: "already (?:been )?(?:signed",
  P6: "(?:may|might|could) (?:already )?have (?:been )?(?:carried out",
  P8: "requires? (?:the )?(?:oauth |api |token )?scope",
  P9: "(?:is|are) not (?:a |an )(?:verified",
  P10: "ERR_CERT_",
  P11: "exceeds? (?:the |your |its |account |wallet |available )?balance",
  P12: "managed by",
  P13: "confirm(?:ation|ed)?[ _-]?",
};
/**
 * Parts that are alternatives of a rule's pattern, not whole rules: each edit finds the top-level
 * alternative holding its phrase and removes it (`null`) or replaces the phrase in it.
 * `P7` the limit-per-window alternative of the quota rule (`limit 100/1h`); `C1` … `C7` the
 * second round of issue 27.3: a secret named by what it is said to be wrong, a host that lacks a
 * program, config file or base URL, a plan's count or a total of requests (not a rate), a change
 * a policy or an admission webhook refused; `C5` a named busy condition (another operation still
 * running) or a rate per second or minute, or of requests at once, retried; `C6` a runtime error
 * of the server's own code stops; `C7` "not found or not accessible" is a wrong name.
 */
const EDITS: Record<string, [phrase: string, replacement: string | null][]> = {
  P7: [["(?:1 ?)?(?:h|hr|hours?", null]],
  C1: [
    ["passphrase|secret|(?:api|secret|access|private|signing)[ _-]?key|credentials?)", null],
    [String.raw`(?:password|passphrase|secret key|api[ _-]?key|access token)\b[^`, null],
    ["authentication[_ ](?:malformed", null],
    ["(?:authentication|auth) credentials?", null],
    ["(?:token|session) refresh", null],
  ],
  C2: [
    ["executable file not found", null],
    [String.raw`sh: (?:\d+: )?`, null],
    ["config(?:uration)? file", null],
    ["(?:from|url:?) undefined", null],
    [String.raw`missing required (?:[\w-]+ ){0,2}configuration`, null],
  ],
  C3: [
    [
      "(?:your |the |their )?(?:plan|account|subscription|tier)",
      "(?:your |the )?(?:plan|account|subscription|tier)",
    ],
    ["(?:at most|up to|a maximum of|only)", null],
    ["total ?(?:requests|calls|api calls)", null],
  ],
  C4: [
    ["admission webhook", null],
    ["denied by (?:the |an? )?(?:", null],
  ],
  C5: [
    ["(?:requests|calls|queries|messages|operations) per (?:second|minute)", null],
    ["concurrent (?:", null],
    ["blocked by (?:an)?other", null],
    ["another (?:operation|update|deployment|job)", null],
  ],
  C6: [
    ["cannot read propert", null],
    ["(?:undefined|null) is not an object", null],
  ],
  C7: [["(?:is |are )?(?:not accessible|inaccessible)", "(?!)"]],
};
const COMPONENTS = ["A", "B", ...Object.keys(FAMILIES), ...Object.keys(EDITS)];

/** The top-level alternatives of a pattern's source (outside groups and character classes). */
function alternativesOf(source: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let inClass = false;
  let from = 0;
  for (let i = 0; i < source.length; i++) {
    const ch = source[i];
    if (ch === "\\") i++;
    else if (inClass) inClass = ch !== "]";
    else if (ch === "[") inClass = true;
    else if (ch === "(") depth++;
    else if (ch === ")") depth--;
    else if (ch === "|" && depth === 0) {
      out.push(source.slice(from, i));
      from = i + 1;
    }
  }
  out.push(source.slice(from));
  return out;
}

type Figures = Record<string, { right: number; unambiguous: number; dangerous: number }>;

interface Line {
  readonly label: string;
  readonly ambiguous?: boolean;
  readonly effect?: "read_only" | "idempotent" | "mutating";
  readonly text: string;
  readonly tool?: string;
}

const load = (file: string): Line[] =>
  readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line);

const dangerous = (l: Line, predicted: string) =>
  (l.label === "stop" && predicted === "retry_dependency") ||
  (l.effect === "mutating" && l.label === "stop" && predicted === "correct_arguments") ||
  (l.effect === "mutating" && predicted === "retry_dependency" && l.label !== "retry_dependency");

/** One configuration's figures, in this process: the rule table is changed before its first use. */
function figures(off: ReadonlySet<string>): Figures {
  const rules = BUILTIN_RULES as TextRule[];
  const weak = new Set(rules.filter((r) => r.weak === true));
  for (const [name, phrase] of Object.entries(FAMILIES)) {
    const at = rules.findIndex((r) => r.pattern.source.includes(phrase));
    if (at < 0) throw new Error(`family ${name} not found`);
    if (off.has(name)) rules.splice(at, 1);
  }
  for (const [name, edits] of Object.entries(EDITS)) {
    for (const [phrase, replacement] of edits) {
      const at = rules.findIndex((r) => r.pattern.source.includes(phrase));
      if (at < 0) throw new Error(`${name}: ${phrase} not found`);
      if (!off.has(name)) continue;
      const rule = rules[at] as TextRule;
      const parts = alternativesOf(rule.pattern.source);
      const hit = parts.filter((a) => a.includes(phrase));
      if (hit.length !== 1) throw new Error(`${name}: ${phrase} in ${hit.length} alternatives`);
      const kept = parts.flatMap((a) =>
        !a.includes(phrase) ? [a] : replacement === null ? [] : [a.replace(phrase, replacement)],
      );
      rules[at] = { ...rule, pattern: new RegExp(kept.join("|"), rule.pattern.flags) };
    }
  }
  if (off.has("B")) for (const r of rules) delete (r as { weak?: true }).weak;
  const rulesOnly: TextModel = { v: 1, trainedOn: "nothing", bias: [0, 0, 0, 0], weights: {} };
  const policy = loadPolicy({});
  const decided = (c: Classification, text: string, effect: Line["effect"]): string => {
    if (c.action === "correct_arguments") {
      return effect !== undefined && stopsGuessedWrite(c, effect) ? "stop" : c.action;
    }
    if (c.action !== "retry_dependency" || effect !== "mutating" || off.has("A")) return c.action;
    const isWeak = off.has("B")
      ? (c.source === "rule" && weak.has(explainBuiltinMatch(text)?.rule as TextRule)) ||
        c.source === "model"
      : c.weakRetry === true;
    return isWeak ? "stop" : c.action;
  };
  const out: Figures = {};
  for (const set of SETS) {
    const blind = (DEV_SETS as readonly string[]).includes(set);
    const lines = load(blind ? `test/${set}/tool-errors.jsonl` : `test/corpus/${set}.jsonl`);
    const f = { right: 0, unambiguous: 0, dangerous: 0 };
    for (const l of lines) {
      const failure = failureFromResult({
        content: [{ type: "text", text: l.text }],
        isError: true,
      });
      // As `pnpm eval` scores them: blind lines with the shipped model, corpus lines by the rules.
      const c = blind
        ? classify(failure, lineToolPolicy(l))
        : classify(failure, resolveToolPolicy(policy, l.tool ?? "tool"), undefined, rulesOnly);
      const predicted = decided(c, l.text, l.effect);
      if (!l.ambiguous) {
        f.unambiguous++;
        if (predicted === l.label) f.right++;
      }
      if (dangerous(l, predicted)) f.dangerous++;
    }
    out[set] = f;
  }
  return out;
}

const self = fileURLToPath(import.meta.url);
/** Parts off in every configuration (`--always-off`): the build before them. */
const alwaysOff = (process.argv.find((a) => a.startsWith("--always-off=")) ?? "=")
  .split("=")[1]
  ?.split(",")
  .filter(Boolean) as string[];
function run(offParts: readonly string[]): Figures {
  const off = [...offParts, ...alwaysOff];
  const json = execFileSync(
    process.execPath,
    ["--conditions=source", "--import", "tsx", self, `--off=${off.join(",")}`],
    { encoding: "utf8", maxBuffer: 1 << 24 },
  );
  return JSON.parse(json) as Figures;
}

const offArg = process.argv.find((a) => a.startsWith("--off="));
if (offArg !== undefined) {
  const off = new Set(offArg.slice("--off=".length).split(",").filter(Boolean));
  process.stdout.write(JSON.stringify(figures(off)));
} else {
  const full = run([]);
  const cell = (s: string, f: Figures) => `${f[s]?.right}/${f[s]?.unambiguous} d${f[s]?.dangerous}`;
  console.log(`full: ${SETS.map((s) => `${s} ${cell(s, full)}`).join(", ")}`);
  console.log("what each component adds (right lines / dangerous decisions), per set:");
  const adds: Record<string, Record<string, [number, number]>> = {};
  const measured = COMPONENTS.filter((c) => !alwaysOff.includes(c));
  for (const c of measured) {
    const without = run([c]);
    adds[c] = Object.fromEntries(
      SETS.map((s) => [
        s,
        [
          (full[s]?.right ?? 0) - (without[s]?.right ?? 0),
          (full[s]?.dangerous ?? 0) - (without[s]?.dangerous ?? 0),
        ],
      ]),
    );
    const fired = DEV_SETS.filter((s) => adds[c]?.[s]?.some((v) => v !== 0)).length;
    console.log(
      `${c.padEnd(4)} ${SETS.map((s) => `${s} ${adds[c]?.[s]?.[0]}/${adds[c]?.[s]?.[1]}`).join(", ")}  (changes lines of ${fired} of ${DEV_SETS.length} blind sets)`,
    );
  }
  console.log("leave one set out (keep a component if right - 2 x dangerous > 0 on the others):");
  let right = 0;
  let unambiguous = 0;
  let danger = 0;
  for (const held of DEV_SETS) {
    const drop = measured.filter(
      (c) =>
        SETS.filter((s) => s !== held).reduce(
          (sum, s) => sum + (adds[c]?.[s]?.[0] ?? 0) - 2 * (adds[c]?.[s]?.[1] ?? 0),
          0,
        ) <= 0,
    );
    const f = drop.length === 0 ? full : run(drop);
    right += f[held]?.right ?? 0;
    unambiguous += f[held]?.unambiguous ?? 0;
    danger += f[held]?.dangerous ?? 0;
    console.log(`${held}: ${cell(held, f)} (dropped: ${drop.join(", ") || "none"})`);
  }
  console.log(`total: ${right}/${unambiguous} right, ${danger} dangerous`);
}
