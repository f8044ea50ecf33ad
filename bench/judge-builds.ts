/**
 * The judging functions of two builds side by side, for bench/judge-ab.ts and
 * bench/judge-traffic.ts: this checkout's built `@governor/core` and the copy in GOVERNOR_BASE
 * (bench/snapshot-dist.sh), each with the policy's defaults.
 */
import * as core from "@governor/core";
import * as judge from "@governor/core/judge";
import { baseDir, importBase } from "./base-build.ts";
import { toolErrors } from "./judge-texts.ts";

/** A judging function: the text, its corpus row (test/corpus/tool-errors.jsonl) and its failure. */
export type Fn = (text: string, row: number, failure: core.Failure) => unknown;
export type Build = {
  readonly fns: Readonly<
    Record<
      "matchBuiltinRules" | "normalizeText" | "redact" | "assessFailure" | "assessWithCall",
      Fn
    >
  >;
  readonly failureFromResult: typeof core.failureFromResult;
};

/**
 * A call as an MCP host knows it (arguments and the tool's input schema) for every text: six
 * arguments of the shapes tools take, one of them missing from a `required` list the call keeps.
 */
const CALL = {
  args: {
    id: "inv_7Hq2k9",
    name: "quarterly-report",
    query: "status:open owner:jdoe",
    limit: 25,
    url: "https://api.example.com/v2/items",
    tags: ["billing", "q3"],
  },
  inputSchema: {
    type: "object",
    properties: {
      id: { type: "string" },
      name: { type: "string" },
      query: { type: "string" },
      limit: { type: "integer" },
      url: { type: "string" },
      tags: { type: "array" },
      mode: { type: "string", enum: ["fast", "full"] },
    },
    required: ["id", "name"],
  },
};

function build(c: typeof core, j: typeof judge): Build {
  const policy = c.loadPolicy({});
  const tools = toolErrors.map((row) => j.resolveToolPolicy(policy, row.tool));
  const { maxLength, emails, patterns } = policy.redaction;
  return {
    failureFromResult: c.failureFromResult,
    fns: {
      matchBuiltinRules: (text) => j.matchBuiltinRules(text),
      normalizeText: (text) => j.normalizeText(text),
      redact: (text) => j.redact(text, { maxLength, emails, patterns }),
      assessFailure: (_text, row, failure) =>
        j.assessFailure(failure, {
          policy,
          tool: tools[row] as (typeof tools)[number],
          effect: "read_only",
        }),
      // The same failures of a write whose call the run knows (what the call's reading costs).
      assessWithCall: (_text, row, failure) =>
        j.assessFailure(failure, {
          policy,
          tool: tools[row] as (typeof tools)[number],
          effect: "mutating",
          call: CALL,
        }),
    },
  };
}

/** The base build (GOVERNOR_BASE; `script` names the bench in the error when it is unset) and this one. */
export async function judgeBuilds(
  script: string,
): Promise<{ readonly base: string; readonly builds: readonly [Build, Build] }> {
  const base = baseDir(script);
  const baseCore = await importBase<typeof core>(base, "packages/core/dist/index.js");
  const baseJudge = await importBase<typeof judge>(base, "packages/core/dist/judge/index.js");
  return { base, builds: [build(baseCore, baseJudge), build(core, judge)] };
}
