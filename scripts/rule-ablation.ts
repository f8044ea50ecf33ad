/**
 * Which parts of the rule work of issue 27 items 2-3 carry from one set to another: each part
 * (component) turned off in turn, on the development sets (test/blind … test/blind6 and the
 * corpus), and a leave-one-set-out selection over them.
 *
 * Components: `A` a retry read from a generic word (TextRule.weak) is not repeated on a mutating
 * tool (stopsGuessedWrite); `B` a generic word yields to a specific phrasing; `P1` … `P13` the
 * families of person-only cues added with them (found by a phrase of their pattern, FAMILIES).
 * For each component and set: the right decisions on unambiguous lines and the dangerous decisions
 * (test/blind/README.md) it adds, full build minus the build without it. Leave one set out: a
 * component is kept for a held-out blind set only when, over the other five blind sets and the
 * corpus, it gains (right lines minus twice the dangerous decisions > 0); the held-out set is then
 * scored with the kept components only (one process per set).
 *
 * The held-out sets (test/blind7 and later) are never read.
 *
 * Usage: node --conditions=source --import tsx scripts/rule-ablation.ts
 *   (--off=A,P4 prints one configuration's per-set figures as JSON)
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

const DEV_SETS = ["blind", "blind2", "blind3", "blind4", "blind5", "blind6"] as const;
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
/** The limit-per-window alternative of the quota rule (`limit 100/1h`). */
const P7 = "(?:1 ?)?(?:h|hr|hours?";
const COMPONENTS = ["A", "B", ...Object.keys(FAMILIES), "P7"];

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
  if (off.has("P7")) {
    const at = rules.findIndex((r) => r.pattern.source.includes(P7));
    const rule = rules[at] as TextRule;
    const source = rule.pattern.source
      .split("|(?:")
      .filter((a) => !a.includes(P7))
      .join("|(?:");
    rules[at] = { ...rule, pattern: new RegExp(source, rule.pattern.flags) };
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
function run(off: readonly string[]): Figures {
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
  for (const c of COMPONENTS) {
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
      `${c.padEnd(4)} ${SETS.map((s) => `${s} ${adds[c]?.[s]?.[0]}/${adds[c]?.[s]?.[1]}`).join(", ")}  (changes lines of ${fired} of 6 blind sets)`,
    );
  }
  console.log("leave one set out (keep a component if right - 2 x dangerous > 0 on the others):");
  let right = 0;
  let unambiguous = 0;
  let danger = 0;
  for (const held of DEV_SETS) {
    const drop = COMPONENTS.filter(
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
