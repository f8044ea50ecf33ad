// The labelled corpus (test/corpus/README.md) is well-formed, its ids are unique, the tuning and
// held-out servers do not overlap, and nothing comes from a repository kept apart for an
// independent check (issue 12).
import { existsSync, readFileSync } from "node:fs";
import { failureFromResult } from "@governor/core";
import { fingerprint } from "@governor/core/judge";
import { describe, expect, it } from "vitest";

/** Repositories kept apart for an independent check: no corpus text may come from them. */
const HELD_APART = [
  "Flux159/mcp-server-kubernetes",
  "cloudflare/mcp-server-cloudflare",
  "exa-labs/exa-mcp-server",
  "github/github-mcp-server",
  "grafana/mcp-grafana",
  "hashicorp/terraform-mcp-server",
  "makenotion/notion-mcp-server",
  "microsoft/playwright-mcp",
  "sooperset/mcp-atlassian",
  "stripe/agent-toolkit",
  "ClickHouse/mcp-clickhouse",
  "apify/actors-mcp-server",
  "browserbase/mcp-server-browserbase",
  "chroma-core/chroma-mcp",
  "containers/kubernetes-mcp-server",
  "googleapis/genai-toolbox",
  "heroku/heroku-mcp-server",
  "korotovsky/slack-mcp-server",
  "microsoft/azure-devops-mcp",
  "neondatabase/mcp-server-neon",
  "redis/mcp-redis",
  "twilio-labs/mcp",
  "zereight/gitlab-mcp",
].map((r) => r.toLowerCase());

const LABELS = new Set(["correct_arguments", "retry_dependency", "switch_tool", "stop"]);

type Line = Record<string, unknown>;

function readJsonl(name: string): Line[] {
  const url = new URL(`./corpus/${name}`, import.meta.url);
  if (!existsSync(url)) return [];
  return readFileSync(url, "utf8")
    .split("\n")
    .map((line, i) => ({ line, i }))
    .filter(({ line }) => line.trim() !== "")
    .map(({ line, i }) => {
      try {
        return JSON.parse(line) as Line;
      } catch (err) {
        throw new Error(`${name} line ${i + 1}: not JSON (${(err as Error).message})`);
      }
    });
}

const nonEmpty = (v: unknown) => typeof v === "string" && v.trim() !== "";

/** What is wrong with one tool-error entry, or an empty list. */
function problems(e: Line, heldOut: boolean): string[] {
  const out: string[] = [];
  for (const field of ["id", "server", "source", "tool", "template", "text", "why"]) {
    if (!nonEmpty(e[field])) out.push(`${field} missing or empty`);
  }
  if (!LABELS.has(e.label as string))
    out.push(`label ${String(e.label)} not one of ${[...LABELS]}`);
  if (typeof e.ambiguous !== "boolean") out.push("ambiguous is not a boolean");
  if (typeof e.server === "string" && !/^[\w.-]+\/[\w.-]+$/.test(e.server)) {
    out.push(`server ${e.server} is not owner/repo`);
  }
  if (
    heldOut &&
    !(Number.isInteger(e.fold) && (e.fold as number) >= 1 && (e.fold as number) <= 4)
  ) {
    out.push(`fold ${String(e.fold)} is not 1-4`);
  }
  return out;
}

function fromHeldApart(e: Line): string | undefined {
  const where = `${String(e.server)} ${String(e.source)}`.toLowerCase();
  return HELD_APART.find((repo) => where.includes(repo));
}

const tuning = readJsonl("tool-errors.jsonl");
const heldOut = readJsonl("unseen-tool-errors.jsonl");
const pairs = readJsonl("fingerprint-pairs.jsonl");

describe("corpus files", () => {
  it("has well-formed tool-error entries with unique ids", () => {
    const bad = [
      ...tuning.map((e) => ({ id: e.id, problems: problems(e, false) })),
      ...heldOut.map((e) => ({ id: e.id, problems: problems(e, true) })),
    ].filter((b) => b.problems.length > 0);
    expect(bad).toEqual([]);
    const ids = [...tuning, ...heldOut].map((e) => e.id);
    const repeated = ids.filter((id, i) => ids.indexOf(id) !== i);
    expect(repeated).toEqual([]);
    expect(tuning.length).toBeGreaterThan(200);
  });

  it("keeps tuning and held-out servers apart, one fold per held-out server", () => {
    const tuningServers = new Set(tuning.map((e) => e.server));
    expect(heldOut.filter((e) => tuningServers.has(e.server)).map((e) => e.id)).toEqual([]);
    const folds = new Map<unknown, Set<unknown>>();
    for (const e of heldOut) folds.set(e.server, (folds.get(e.server) ?? new Set()).add(e.fold));
    const split = [...folds].filter(([, f]) => f.size > 1).map(([server]) => server);
    expect(split).toEqual([]);
  });

  it("takes nothing from a repository kept apart", () => {
    const offenders = [...tuning, ...heldOut, ...pairs]
      .map((e) => ({ id: e.id, repo: fromHeldApart(e) }))
      .filter((o) => o.repo !== undefined);
    expect(offenders).toEqual([]);
    // The check itself reads both fields, whatever their case.
    expect(fromHeldApart({ server: "acme/x", source: "GitHub/github-mcp-server/pkg/x.go" })).toBe(
      "github/github-mcp-server",
    );
  });

  it("has well-formed fingerprint pairs", () => {
    const bad = pairs.filter(
      (p) =>
        !["id", "server", "source", "tool", "a", "b", "kind"].every((f) => nonEmpty(p[f])) ||
        typeof p.same !== "boolean" ||
        p.a === p.b,
    );
    expect(bad.map((p) => p.id)).toEqual([]);
    const ids = pairs.map((p) => p.id);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });
});

describe("fingerprint on the labelled pairs", () => {
  // What `governor classify` prints for one text line (as `pnpm eval` computes it).
  const print = (tool: unknown, text: unknown) => {
    const f = failureFromResult({ content: [{ type: "text", text: String(text) }], isError: true });
    return fingerprint({
      tool: String(tool),
      channel: f.channel,
      text: f.text,
      ...(f.code !== undefined && { code: f.code }),
    });
  };

  it("merges at least 80% of same-template pairs and at most 2% of different-template pairs", () => {
    const merged = (p: Line) => print(p.tool, p.a) === print(p.tool, p.b);
    const same = pairs.filter((p) => p.same === true);
    const different = pairs.filter((p) => p.same === false);
    expect(same.length).toBeGreaterThan(100);
    expect(different.length).toBeGreaterThan(100);
    const recall = same.filter(merged).length / same.length;
    const mergeRate = different.filter(merged).length / different.length;
    const wronglyMerged = different.filter(merged).map((p) => p.id);
    expect(recall).toBeGreaterThanOrEqual(0.8);
    expect(mergeRate, `merged: ${wronglyMerged.join(", ")}`).toBeLessThanOrEqual(0.02);
  });
});
