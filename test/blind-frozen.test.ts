// The blind sets (test/blind … test/blind17, scripts/blind-sets.ts; README.md of each, issue 27) are frozen: their data
// files must match the hashes recorded in FROZEN, they must stay well-formed, and their servers must
// stay apart from the corpus, from each other and from the exclusion list. Failures name files, ids and servers, never a
// text: rule writers may run this test, and must not read the blind lines.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { BLIND_SETS, blindSetsToScore, OPENED_BLIND_SETS } from "../scripts/blind-sets.ts";

const corpusDir = new URL("./corpus/", import.meta.url);

/** Files of a blind set that are not data: its README and the hash list itself. */
const NOT_DATA = new Set(["README.md", "FROZEN"]);

const frozenMessage = (set: string) =>
  `${set} is frozen: it was scored once against the rules and is kept from rule work, so ` +
  `that \`pnpm eval\`'s blind figure stays a held-out figure (${set}/README.md). Do not edit ` +
  "it to make a rule look right. A line changes only when its label is shown wrong, by someone " +
  `who does not write rules and with the lead's agreement: then update ${set}/FROZEN ` +
  "(`sha256sum` of each data file) in the same commit and say why, without quoting the text.";

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isObjectSchema = (v: unknown) =>
  isObject(v) && v.type === "object" && (v.properties === undefined || isObject(v.properties));

const sha256 = (dir: URL, name: string) =>
  createHash("sha256")
    .update(readFileSync(new URL(name, dir)))
    .digest("hex");

/** `<sha256>  <file>` lines of FROZEN (comments and blank lines aside). */
function frozen(dir: URL, set: string): Map<string, string> {
  const entries = readFileSync(new URL("FROZEN", dir), "utf8")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
      if (!match) throw new Error(`${set}/FROZEN: not a "<sha256>  <file>" line: ${line}`);
      return [match[2], match[1]] as [string, string];
    });
  return new Map(entries);
}

type Line = Record<string, unknown>;

function jsonl(url: URL, name: string): Line[] {
  return readFileSync(new URL(name, url), "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, i) => {
      try {
        return JSON.parse(line) as Line;
      } catch {
        throw new Error(`${url.pathname}${name} line ${i + 1}: not JSON`);
      }
    });
}

/** Repositories issue 27 excludes from the blind set by name. */
const EXCLUDED = [
  "github/github-mcp-server",
  "stripe/agent-toolkit",
  "microsoft/playwright-mcp",
  "grafana/mcp-grafana",
  "Flux159/mcp-server-kubernetes",
  "makenotion/notion-mcp-server",
  "hashicorp/terraform-mcp-server",
  "exa-labs/exa-mcp-server",
  "sooperset/mcp-atlassian",
  "cloudflare/mcp-server-cloudflare",
  "neondatabase/mcp-server-neon",
  "containers/kubernetes-mcp-server",
  "microsoft/azure-devops-mcp",
  "redis/mcp-redis",
  "apify/actors-mcp-server",
  "heroku/heroku-mcp-server",
  "ClickHouse/mcp-clickhouse",
  "chroma-core/chroma-mcp",
  "browserbase/mcp-server-browserbase",
  "zereight/gitlab-mcp",
  "korotovsky/slack-mcp-server",
  "googleapis/genai-toolbox",
  "twilio-labs/mcp",
  "domdomegg/airtable-mcp-server",
  "alpacahq/alpaca-mcp-server",
  "akuity/argocd-mcp",
  "buildkite/buildkite-mcp-server",
  "CircleCI-Public/mcp-server-circleci",
  "digitalocean-labs/mcp-digitalocean",
  "dynatrace-oss/dynatrace-mcp",
  "elevenlabs/elevenlabs-mcp",
  "honeycombio/honeycomb-mcp",
  "neo4j-contrib/mcp-neo4j",
  "PagerDuty/pagerduty-mcp-server",
  "paypal/agent-toolkit",
  "pinecone-io/pinecone-mcp",
  "render-oss/render-mcp-server",
  "square/square-mcp-server",
].map((r) => r.toLowerCase());

const LABELS = new Set(["correct_arguments", "retry_dependency", "switch_tool", "stop"]);
const EFFECTS = new Set(["read_only", "idempotent", "mutating"]);
const nonEmpty = (v: unknown) => typeof v === "string" && v.trim() !== "";

/**
 * The freeze, the shape and the server exclusions of one blind set. `apartFrom` are the other blind
 * sets, which may share no server with it; failures name files, ids and servers, never a text.
 */
function checkBlindSet(set: string, apartFrom: string[]) {
  const dir = new URL(`./${set.replace(/^test\//, "")}/`, import.meta.url);
  describe(`${set} is frozen`, () => {
    it(`matches the hash of every data file recorded in ${set}/FROZEN`, () => {
      const recorded = frozen(dir, set);
      expect(recorded.size, `${set}/FROZEN lists no file`).toBeGreaterThan(0);
      const present = readdirSync(dir).filter((name) => !NOT_DATA.has(name));
      const problems = [
        ...present.filter((name) => !recorded.has(name)).map((name) => `${name}: not in FROZEN`),
        ...[...recorded.keys()]
          .filter((name) => !present.includes(name))
          .map((name) => `${name}: listed in FROZEN but missing`),
        ...present
          .filter((name) => recorded.has(name) && recorded.get(name) !== sha256(dir, name))
          .map((name) => `${name}: changed (sha256 ${sha256(dir, name)})`),
      ];
      expect(problems, frozenMessage(set)).toEqual([]);
    });
  });

  describe(`${set} is well-formed and apart from the corpus and the other blind sets`, () => {
    const lines = jsonl(dir, "tool-errors.jsonl");
    const pairs = jsonl(dir, "fingerprint-pairs.jsonl");
    const servers = new Set(lines.map((l) => String(l.server)));

    it("has the lines, servers and pairs issue 27 asks for", () => {
      expect(lines.length).toBeGreaterThanOrEqual(300);
      expect(servers.size).toBeGreaterThanOrEqual(25);
      expect(pairs.filter((p) => p.same === true).length).toBeGreaterThanOrEqual(150);
      expect(pairs.filter((p) => p.same === false).length).toBeGreaterThanOrEqual(150);
    });

    it("has unique ids and the corpus's fields, labels and effects on every line", () => {
      const bad = lines.filter(
        (l) =>
          !["id", "server", "source", "tool", "template", "text", "why"].every((f) =>
            nonEmpty(l[f]),
          ) ||
          !LABELS.has(String(l.label)) ||
          typeof l.ambiguous !== "boolean" ||
          (l.effect !== undefined && !EFFECTS.has(String(l.effect))) ||
          // Where a set records the failing call: its arguments as an object, and the tool's
          // input schema as an object schema beside them.
          (l.args !== undefined && !isObject(l.args)) ||
          (l.inputSchema !== undefined && (l.args === undefined || !isObjectSchema(l.inputSchema))),
      );
      expect(bad.map((l) => l.id)).toEqual([]);
      const ids = lines.map((l) => l.id);
      expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    });

    it("has well-formed pairs from the blind servers only", () => {
      const bad = pairs.filter(
        (p) =>
          !["id", "server", "source", "tool", "a", "b", "kind"].every((f) => nonEmpty(p[f])) ||
          typeof p.same !== "boolean" ||
          p.a === p.b ||
          !servers.has(String(p.server)),
      );
      expect(bad.map((p) => p.id)).toEqual([]);
      const ids = pairs.map((p) => p.id);
      expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    });

    // A second labeller's labels (scripts/label-agreement.ts; no text, no why), where one was made.
    if (readdirSync(dir).includes("second-labels.jsonl"))
      it("has one second label per line, and no text", () => {
        const second = jsonl(dir, "second-labels.jsonl");
        const ids = new Set(lines.map((l) => String(l.id)));
        const bad = second.filter(
          (l) =>
            !ids.has(String(l.id)) ||
            !LABELS.has(String(l.label)) ||
            typeof l.ambiguous !== "boolean" ||
            Object.keys(l).some((k) => !["id", "label", "ambiguous"].includes(k)),
        );
        expect(bad.map((l) => l.id)).toEqual([]);
        const labelled = second.map((l) => String(l.id));
        expect(labelled.filter((id, i) => labelled.indexOf(id) !== i)).toEqual([]);
        expect([...ids].filter((id) => !labelled.includes(id))).toEqual([]);
      });

    it("shares no server with test/corpus or another blind set and takes none the issue excludes", () => {
      const corpusServers = new Set(
        readdirSync(corpusDir)
          .filter((name) => name.endsWith(".jsonl"))
          .flatMap((name) => jsonl(corpusDir, name))
          .map((l) => l.server)
          .filter((s): s is string => typeof s === "string")
          .map((s) => s.toLowerCase()),
      );
      expect(corpusServers.size).toBeGreaterThan(0);
      const blind = [...servers].map((s) => s.toLowerCase());
      expect(blind.filter((s) => corpusServers.has(s))).toEqual([]);
      expect(blind.filter((s) => EXCLUDED.includes(s))).toEqual([]);
      for (const other of apartFrom) {
        const otherDir = new URL(`./${other.replace(/^test\//, "")}/`, import.meta.url);
        const otherServers = new Set(
          jsonl(otherDir, "tool-errors.jsonl").map((l) => String(l.server).toLowerCase()),
        );
        expect(otherServers.size, `${other} has no server`).toBeGreaterThan(0);
        expect(
          blind.filter((s) => otherServers.has(s)),
          `servers in both ${set} and ${other}`,
        ).toEqual([]);
      }
    });
  });
}

for (const name of BLIND_SETS)
  checkBlindSet(
    `test/${name}`,
    BLIND_SETS.filter((other) => other !== name).map((other) => `test/${other}`),
  );

describe("the blind sets opened to rule work", () => {
  it("are the sets whose README says so; the others stay closed", () => {
    const saysOpened = BLIND_SETS.filter((name) =>
      readFileSync(new URL(`./${name}/README.md`, import.meta.url), "utf8").includes(
        "**Opened to rule work",
      ),
    );
    expect([...OPENED_BLIND_SETS]).toEqual(saysOpened);
    // The newest set judges the next change: there is always a closed one.
    expect(OPENED_BLIND_SETS.length).toBeLessThan(BLIND_SETS.length);
  });

  it("pnpm eval --opened-only scores them alone; plain pnpm eval scores every set", () => {
    expect(blindSetsToScore(["--json", "--opened-only"])).toEqual(OPENED_BLIND_SETS);
    expect(blindSetsToScore(["--json"])).toEqual(BLIND_SETS);
  });
});
