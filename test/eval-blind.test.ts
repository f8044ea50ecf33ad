// `pnpm eval` scores the blind set as aggregates only (test/blind/README.md): run the real script on
// a blind directory of made-up lines and check that its figures are the ones the classifier and
// the fingerprint give, line by line, and that no id, server or text of a line reaches the output.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { failureFromResult, loadPolicy } from "@governor/core";
import { classify, fingerprint, resolveToolPolicy } from "@governor/core/judge";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BLIND_SETS, type BlindSetName } from "../scripts/blind-sets.ts";

const LABELS = ["correct_arguments", "retry_dependency", "switch_tool", "stop"] as const;
type Label = (typeof LABELS)[number];

interface Line {
  id: string;
  server: string;
  source: string;
  tool: string;
  template: string;
  text: string;
  label: Label;
  why: string;
  ambiguous: boolean;
  effect?: "read_only" | "mutating";
  args?: Record<string, unknown>;
  inputSchema?: unknown;
}

const line = (
  n: number,
  tool: string,
  text: string,
  label: Label,
  extra: {
    ambiguous?: boolean;
    effect?: "read_only" | "mutating";
    args?: Record<string, unknown>;
    inputSchema?: unknown;
  } = {},
): Line => ({
  id: `fixture-blind-${n}`,
  server: "example-org/fixture-blind-server",
  source: "made up for this test",
  tool,
  template: text,
  text,
  label,
  why: "made up for this test",
  ambiguous: extra.ambiguous ?? false,
  ...(extra.effect && { effect: extra.effect }),
  ...(extra.args && { args: extra.args, inputSchema: extra.inputSchema }),
});

// Made-up texts, each labelled so that one kind of decision the eval counts is exercised.
const LINES: Line[] = [
  line(1, "fixture_write", "upstream answered 503 Service Unavailable for qzx-1", "stop", {
    effect: "mutating",
  }),
  line(2, "fixture_write", "field 'qzx_amount' must be a positive integer", "stop", {
    effect: "mutating",
  }),
  line(3, "fixture_write", "read ECONNRESET while talking to qzx-broker", "correct_arguments", {
    effect: "mutating",
  }),
  line(4, "fixture_read", "field 'qzx_limit' must be a positive integer", "correct_arguments", {
    effect: "read_only",
  }),
  line(5, "fixture_read", "401 Unauthorized: the qzx token was revoked", "stop"),
  line(6, "fixture_read", "connect ETIMEDOUT 10.9.8.7:4433 (qzx)", "retry_dependency", {
    ambiguous: true,
  }),
  // A line that records its call: the path the text names is in no argument, so the run reads it
  // as the server's own (a stop), where the text alone reads a correction.
  line(7, "fixture_read", "ENOENT: no such file or directory, open '/srv/qzx/index.db'", "stop", {
    effect: "read_only",
    args: { query: "alpha" },
    inputSchema: { type: "object", properties: { query: { type: "string" } } },
  }),
];

const PAIRS = [
  {
    a: "no qzx index named [alpha-2025.01]",
    b: "no qzx index named [beta_logs]",
    same: true,
    kind: "dotted-name",
  },
  {
    a: "qzx job 41 timed out after 30s",
    b: "qzx job 977 timed out after 2m5s",
    same: true,
    kind: "duration",
  },
  { a: "qzx quota of the plan exceeded", b: "qzx index alpha not found", same: false, kind: "x" },
  {
    a: '{"code":"qzx_a","message":"bad"}',
    b: '{"code":"qzx_b","message":"bad"}',
    same: false,
    kind: "json-upstream",
  },
].map((p, i) => ({
  id: `fixture-pair-${i + 1}`,
  server: "example-org/fixture-blind-server",
  source: "made up for this test",
  tool: "fixture_read",
  ...p,
}));

/**
 * A second labeller's labels of the made-up lines: it agrees on lines 1, 2, 4 and 6 (calling 4
 * ambiguous) and disagrees on 3 and 5, so the consensus figures leave out 3 and 5, and 4 from the
 * accuracy.
 */
const SECOND: { id: string; label: Label; ambiguous: boolean }[] = LINES.map((l, i) => ({
  id: l.id,
  label: i === 2 ? "retry_dependency" : i === 4 ? "correct_arguments" : l.label,
  ambiguous: i === 3 ? true : l.ambiguous,
}));

const toFailure = (text: string) =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });

/** The classification of a line, for a host that declared its effect, with its call if recorded. */
function classified(l: Line) {
  const policy = l.effect
    ? loadPolicy({ tools: { [l.tool]: { effect: l.effect } } })
    : loadPolicy({});
  const call = l.args && { args: l.args, inputSchema: l.inputSchema };
  return classify(toFailure(l.text), resolveToolPolicy(policy, l.tool), call);
}
/** What the classifier decides for a line, for a host that declared its effect. */
const predicted = (l: Line): string => classified(l).action;
/** Which stage of the classifier decided it. */
const stageOf = (l: Line): string => classified(l).source;

const print = (tool: string, text: string) => {
  const f = toFailure(text);
  return fingerprint({
    tool,
    channel: f.channel,
    text: f.text,
    ...(f.code !== undefined && { code: f.code }),
  });
};

let dir: string;
/** `pnpm eval` with the made-up lines as every blind set (test/blind to test/blind17) at once. */
let textOut: string;
let jsonAll: Record<BlindSetName, unknown>;
/** `pnpm eval` on the real blind sets, for the check that none of their lines is printed. */
let textReal: string;
let jsonReal: string;
type Counts = { correct: number; total: number; confusion: Record<Label, Record<Label, number>> };
/** The part of `pnpm eval --json` this test reads. */
let json: {
  blind: {
    lines: number;
    servers: number;
    unambiguous: Counts;
    classifiedUnambiguous: { correct: number; total: number; accuracy: number };
    all: Counts;
    dangerous: Record<
      "total" | "personOnlyRetried" | "mutatingStopAsArguments" | "mutatingWriteRetried",
      number
    > & { bySource: Record<string, number>; asUnkeyedRun: number };
    fingerprints: Record<"samePairs" | "differentPairs" | "sameMerged" | "differentMerged", number>;
    consensus: { agreedLines: number; unambiguous: Counts; dangerous: number } | null;
  };
};

const runEval = (...args: string[]) =>
  execFileSync(
    process.execPath,
    ["--conditions=source", "--import", "tsx", "scripts/eval-corpus.ts", ...args],
    { cwd: join(import.meta.dirname, ".."), encoding: "utf8", maxBuffer: 64 * 1024 * 1024 },
  );

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "governor-blind-"));
  writeFileSync(
    join(dir, "tool-errors.jsonl"),
    `${LINES.map((l) => JSON.stringify(l)).join("\n")}\n`,
  );
  writeFileSync(
    join(dir, "fingerprint-pairs.jsonl"),
    `${PAIRS.map((p) => JSON.stringify(p)).join("\n")}\n`,
  );
  writeFileSync(
    join(dir, "second-labels.jsonl"),
    `${SECOND.map((l) => JSON.stringify(l)).join("\n")}\n`,
  );
  const everySet = BLIND_SETS.map((name) => `--${name}=${dir}`);
  // One run gives both forms: the text on stdout, the JSON (as --json prints it) in a file.
  const jsonFile = join(dir, "eval.json");
  textOut = runEval(`--json-to=${jsonFile}`, ...everySet);
  jsonAll = JSON.parse(readFileSync(jsonFile, "utf8"));
  json = jsonAll as unknown as typeof json;
  const realFile = join(dir, "eval-real.json");
  textReal = runEval(`--json-to=${realFile}`);
  jsonReal = readFileSync(realFile, "utf8");
}, 360_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("pnpm eval on the blind set", () => {
  it("reports the classifier's own decisions: accuracy and confusion on unambiguous lines", () => {
    const rows = LINES.map((l) => ({ ...l, predicted: predicted(l) }));
    const clear = rows.filter((r) => !r.ambiguous);
    const b = json.blind;
    expect(b.lines).toBe(LINES.length);
    expect(b.servers).toBe(1);
    expect(b.unambiguous.total).toBe(clear.length);
    expect(b.unambiguous.correct).toBe(clear.filter((r) => r.predicted === r.label).length);
    expect(b.all.total).toBe(rows.length);
    // The classification's own action on the same lines, beside the decision.
    expect(b.classifiedUnambiguous).toEqual({
      correct: clear.filter((r) => classified(r).action === r.label).length,
      total: clear.length,
      accuracy: clear.filter((r) => classified(r).action === r.label).length / clear.length,
    });
    expect(textOut).toContain("the classification alone, before the asymmetry of harm on a write:");
    // A line that records its call is scored with it: line 7's path is in no argument, a stop,
    // where the text alone reads a correction (so a scoring without the call would count it wrong).
    const withCall = LINES[6] as Line;
    expect(predicted(withCall)).toBe("stop");
    const { args: _args, inputSchema: _schema, ...textOnly } = withCall;
    expect(predicted(textOnly)).toBe("correct_arguments");
    expect(b.unambiguous.confusion.stop.stop).toBe(
      clear.filter((r) => r.label === "stop" && r.predicted === "stop").length,
    );
    for (const label of LABELS) {
      for (const p of LABELS) {
        expect(b.unambiguous.confusion[label][p], `${label} -> ${p}`).toBe(
          clear.filter((r) => r.label === label && r.predicted === p).length,
        );
      }
    }
  });

  it("counts each kind of dangerous decision the legend names", () => {
    const rows = LINES.map((l) => ({ ...l, predicted: predicted(l) }));
    const retried = rows.filter((r) => r.label === "stop" && r.predicted === "retry_dependency");
    const asArguments = rows.filter(
      (r) => r.effect === "mutating" && r.label === "stop" && r.predicted === "correct_arguments",
    );
    const writeRetried = rows.filter(
      (r) =>
        r.effect === "mutating" &&
        r.predicted === "retry_dependency" &&
        r.label !== "retry_dependency",
    );
    // The made-up lines exercise all three (else this test would check nothing); line 1, a stop
    // retried on a mutating tool, is of the first kind and the third, and counted once in total.
    for (const kind of [retried, asArguments, writeRetried]) expect(kind.length).toBeGreaterThan(0);
    const d = json.blind.dangerous;
    expect([d.personOnlyRetried, d.mutatingStopAsArguments, d.mutatingWriteRetried]).toEqual([
      retried.length,
      asArguments.length,
      writeRetried.length,
    ]);
    const dangerous = new Set([...retried, ...asArguments, ...writeRetried]);
    expect(d.total).toBe(dangerous.size);
    expect(textOut).toContain(`dangerous decisions: ${d.total} `);
    // Counted per stage of classify that made them, and only them.
    const bySource: Record<string, number> = {};
    for (const r of dangerous) bySource[stageOf(r)] = (bySource[stageOf(r)] ?? 0) + 1;
    expect(d.bySource).toEqual(bySource);
    // In the run of a host that keys no write, a retry of a write whose outcome is unknown stops
    // (uncertain_mutation) instead of being sent again: those lines are no longer dangerous.
    const stoppedUnkeyed = [...dangerous].filter(
      (r) =>
        r.effect === "mutating" &&
        r.predicted === "retry_dependency" &&
        classified(r).certainty === "unknown",
    );
    expect(stoppedUnkeyed.length).toBeGreaterThan(0);
    expect(d.asUnkeyedRun).toBe(dangerous.size - stoppedUnkeyed.length);
    expect(textOut).toContain(
      `dangerous decisions in the run of a host that keys no write (a write in doubt stops, not retried): ${d.asUnkeyedRun}`,
    );
    expect(textOut).toContain("dangerous decisions by the stage that made them: ");
  });

  it("scores, beside a second labeller's labels, only what both labellers agree on", () => {
    const rows = LINES.map((l, i) => ({ ...l, predicted: predicted(l), second: SECOND[i] }));
    const agreed = rows.filter((r) => r.second?.label === r.label);
    const clear = agreed.filter((r) => !r.ambiguous && r.second?.ambiguous === false);
    expect(agreed.map((r) => r.id)).toEqual([
      "fixture-blind-1",
      "fixture-blind-2",
      "fixture-blind-4",
      "fixture-blind-6",
      "fixture-blind-7",
    ]);
    const c = json.blind.consensus;
    expect(c).not.toBeNull();
    expect(c?.agreedLines).toBe(5);
    expect(c?.unambiguous.total).toBe(clear.length);
    expect(c?.unambiguous.correct).toBe(clear.filter((r) => r.predicted === r.label).length);
    // Lines 1 and 2 are dangerous if the classifier keeps them as the eval counts them above;
    // line 3 (a disagreement) is left out whatever it is.
    expect(c?.dangerous).toBe(
      agreed.filter(
        (r) =>
          (r.label === "stop" && r.predicted === "retry_dependency") ||
          (r.effect === "mutating" && r.label === "stop" && r.predicted === "correct_arguments") ||
          (r.effect === "mutating" &&
            r.predicted === "retry_dependency" &&
            r.label !== "retry_dependency"),
      ).length,
    );
    expect(c?.dangerous).toBeLessThan(json.blind.dangerous.total);
    expect(textOut).toContain(`where a second labeller agrees (5 lines labelled alike)`);
  });

  it("reports fingerprint recall and merges on the blind pairs", () => {
    const merged = PAIRS.map((p) => print(p.tool, p.a) === print(p.tool, p.b));
    const f = json.blind.fingerprints;
    expect([f.samePairs, f.differentPairs]).toEqual([2, 2]);
    expect(f.sameMerged).toBe(PAIRS.filter((p, i) => p.same && merged[i]).length);
    expect(f.differentMerged).toBe(PAIRS.filter((p, i) => !p.same && merged[i]).length);
  });

  it("prints no id, server, tool or text of a blind line, in either mode", () => {
    const secrets = [
      ...LINES.flatMap((l) => [l.id, l.text]),
      ...PAIRS.flatMap((p) => [p.id, p.a, p.b]),
      "fixture-blind-server",
      "fixture_write",
      "qzx",
    ];
    const both = `${textOut}\n${JSON.stringify(json)}`;
    expect(secrets.filter((s) => both.includes(s))).toEqual([]);
  });
});

describe("pnpm eval on the later blind sets (test/blind2 … test/blind17)", () => {
  it.each(BLIND_SETS.slice(1).map((key) => ({ n: Number(key.slice("blind".length)), key })))(
    "scores set $n exactly like the first: the same figures for the same lines, key $key",
    ({ n, key }) => {
      const { dir: dir1, ...first } = json.blind as Record<string, unknown>;
      const { dir: dirN, ...other } = jsonAll[key] as Record<string, unknown>;
      expect(dir1).toBe(dirN);
      expect(other).toEqual(first);
      expect(textOut).toMatch(
        new RegExp(`Blind set ${n} \\([^:]*: ${LINES.length} lines from 1 servers;`),
      );
    },
  );

  it("prints no id, server, tool or text of a line of any set, in either mode", () => {
    const real = BLIND_SETS.flatMap((set) =>
      readFileSync(join(import.meta.dirname, set, "tool-errors.jsonl"), "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as Line),
    );
    expect(real.length).toBeGreaterThan(0);
    const secrets = [
      ...real.flatMap((l) => [l.id, l.text, l.server]),
      ...LINES.flatMap((l) => [l.id, l.text]),
      "fixture-blind-server",
      "qzx",
    ];
    const all = [textOut, JSON.stringify(jsonAll), textReal, jsonReal].join("\n");
    expect(secrets.filter((s) => all.includes(s))).toEqual([]);
  });
});
