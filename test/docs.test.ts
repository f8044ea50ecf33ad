import { existsSync, readdirSync, readFileSync } from "node:fs";
import { loadPolicy, REASONS } from "@governor/core";
import { beforeAll, describe, expect, it } from "vitest";
import { type DemoReport, runDemo } from "../packages/cli/src/demo.ts";
import { formatDemo } from "../packages/cli/src/demo-format.ts";

const doc = (name: string) => readFileSync(new URL(`../docs/${name}`, import.meta.url), "utf8");

describe("docs stay true to the code", () => {
  it("lists every reason of the closed set with its usual action", () => {
    const text = doc("stop-reasons.md");
    for (const [reason, action] of Object.entries(REASONS)) {
      expect(text, reason).toMatch(new RegExp(`\\|\\s*\`${reason}\`\\s*\\|\\s*${action}\\s*\\|`));
    }
  });

  it("names every metric the recorder emits", () => {
    const text = doc("telemetry.md");
    for (const name of [
      "governor.tool.calls",
      "governor.tool.failures",
      "governor.retries",
      "governor.runs.stopped",
      "governor.run.duration",
    ]) {
      expect(text).toContain(name);
    }
  });
});

/** The body of the first fenced block of `lang` after `heading` in a doc. */
function fenced(text: string, heading: string, lang: string): string {
  const from = text.indexOf(heading);
  expect(from, heading).toBeGreaterThanOrEqual(0);
  const open = text.indexOf(`\`\`\`${lang}\n`, from);
  expect(open, `${lang} block after ${heading}`).toBeGreaterThanOrEqual(0);
  const start = open + lang.length + 4;
  return text.slice(start, text.indexOf("\n```", start));
}

describe("docs/demo.md matches what governor demo prints", () => {
  let report: DemoReport;

  beforeAll(async () => {
    report = await runDemo();
  }, 180_000);

  it("issue 8 (smaller): the sample table is the demo's output, line for line", () => {
    const sample = fenced(doc("demo.md"), "## Sample output", "text");
    // Only the run time varies between runs.
    const printed = formatDemo(report)
      .split("\n")
      .filter((line) => !line.startsWith("done in "))
      .join("\n")
      .trimEnd();
    expect(sample).toBe(printed);
  });

  it("issue 8 (smaller): the sample JSON's totals and metrics are the demo's", () => {
    const sample = fenced(doc("demo.md"), "`--json` (totals", "json");
    const objectOn = (key: string) => {
      const match = new RegExp(`^\\s*"${key}": (\\{.*\\}),?$`, "m").exec(sample);
      expect(match, `"${key}" line in the --json sample`).not.toBeNull();
      return JSON.parse(match?.[1] ?? "null") as unknown;
    };
    for (const strategy of ["naive", "blindRetry", "governed"] as const) {
      expect(objectOn(strategy), strategy).toEqual(report.totals[strategy]);
    }
    expect(objectOn("metrics")).toEqual(report.metrics);
  });

  it("issue 8 (smaller): the figures quoted in the prose are the demo's", () => {
    const { naive, blindRetry, governed } = report.totals;
    // The prose wraps: compare with its line breaks collapsed.
    expect(doc("demo.md").replace(/\s+/g, " ")).toContain(
      `${governed.toolCalls} calls and ${governed.modelCalls} model turns against ` +
        `${naive.toolCalls} and ${naive.modelCalls} (naive) or ${blindRetry.toolCalls} and ` +
        `${blindRetry.modelCalls} (blind retry)`,
    );
  });
});

/**
 * The blocks of README.md, docs/*.md and packages/*\/README.md opened with ```json policy or
 * ```jsonc policy (a policy file as a reader would write it), with the document line each opens on.
 */
function policyBlocks(): { where: string; text: string }[] {
  const root = new URL("..", import.meta.url);
  const docs = [
    "README.md",
    ...readdirSync(new URL("docs/", root))
      .filter((f) => f.endsWith(".md"))
      .map((f) => `docs/${f}`),
    ...readdirSync(new URL("packages/", root))
      .map((p) => `packages/${p}/README.md`)
      .filter((f) => existsSync(new URL(f, root))),
  ];
  return docs.flatMap((doc) => {
    const lines = readFileSync(new URL(doc, root), "utf8").split("\n");
    const found: { where: string; text: string }[] = [];
    for (let i = 0; i < lines.length; i++) {
      if (!/^```jsonc? policy$/.test(lines[i] as string)) continue;
      const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
      found.push({ where: `${doc}:${i + 1}`, text: lines.slice(i + 1, end).join("\n") });
      i = end;
    }
    return found;
  });
}

/** JSON with comments as JSON: `// …` and `/* … *\/` outside strings removed. */
function stripComments(jsonc: string): string {
  let out = "";
  for (let i = 0; i < jsonc.length; i++) {
    const c = jsonc[i] as string;
    if (c === '"') {
      const close = /"(?:[^"\\]|\\.)*"/y;
      close.lastIndex = i;
      const literal = close.exec(jsonc)?.[0] ?? c;
      out += literal;
      i += literal.length - 1;
    } else if (jsonc.startsWith("//", i)) {
      i = jsonc.indexOf("\n", i) - 1;
      if (i < 0) break;
    } else if (jsonc.startsWith("/*", i)) {
      i = jsonc.indexOf("*/", i) + 1;
    } else {
      out += c;
    }
  }
  return out;
}

describe("every policy the docs show as a file loads", () => {
  const blocks = policyBlocks();

  it("finds them: docs/policy.md's shape and $schema blocks, docs/learning.md's settings", () => {
    expect(blocks.map((b) => b.where.replace(/:\d+$/, ""))).toEqual(
      expect.arrayContaining(["docs/policy.md", "docs/policy.md", "docs/learning.md"]),
    );
    expect(blocks.length).toBeGreaterThanOrEqual(3);
  });

  it.each(blocks.map((b) => [b.where, b.text] as const))("%s", (_where, text) => {
    expect(() => loadPolicy(stripComments(text))).not.toThrow();
  });

  it("reads comments as the docs write them, and not inside strings", () => {
    expect(
      JSON.parse(stripComments('{ "a": "x//y", /* b */ "c": 1 // d\n, "e": "/*f*/" }')),
    ).toEqual({ a: "x//y", c: 1, e: "/*f*/" });
  });
});

/** The packages a document's TypeScript blocks import, and those its sh lines `npm i`. */
function importsAndInstalls(markdown: string): { imported: Set<string>; installed: Set<string> } {
  const imported = new Set<string>();
  const installed = new Set<string>();
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const info = /^```(\S.*)?$/.exec(lines[i] as string)?.[1];
    if (info === undefined) continue;
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    const body = lines.slice(i + 1, end);
    if (/^ts\b/.test(info)) {
      for (const [, spec] of body.join("\n").matchAll(/\bfrom "([^".][^"]*)"/g)) {
        if (spec === undefined || spec.startsWith("node:")) continue;
        const parts = spec.split("/");
        imported.add(spec.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string));
      }
    } else if (/^(sh|bash)\b/.test(info)) {
      for (const line of body.filter((l) => /^\s*npm (i|install)\s/.test(l))) {
        // A token up to its comment, without its version: `@modelcontextprotocol/sdk@~1.32.2`.
        for (const token of (line.split(" #")[0] as string).trim().split(/\s+/)) {
          installed.add(token.replace(/(.)@[^/]*$/, "$1"));
        }
      }
    }
    i = end;
  }
  return { imported, installed };
}

describe("a reader can install what the code of a page imports", () => {
  const root = new URL("..", import.meta.url);
  const readmes = readdirSync(new URL("packages/", root))
    .map((p) => `packages/${p}/README.md`)
    .filter((f) => existsSync(new URL(f, root)));
  const guides = readdirSync(new URL("docs/", root))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);

  it.each(readmes)("%s installs its package and every package its code imports", (readme) => {
    const { imported, installed } = importsAndInstalls(readFileSync(new URL(readme, root), "utf8"));
    const own = (
      JSON.parse(
        readFileSync(new URL(readme.replace("README.md", "package.json"), root), "utf8"),
      ) as {
        name: string;
      }
    ).name;
    expect([own, ...imported].filter((name) => !installed.has(name))).toEqual([]);
  });

  // A guide builds on getting-started.md, whose first line installs @governor/core.
  it.each(["README.md", ...guides])("%s installs every package its code imports", (doc) => {
    const { imported, installed } = importsAndInstalls(readFileSync(new URL(doc, root), "utf8"));
    const missing = [...imported].filter(
      (name) => !installed.has(name) && !(doc.startsWith("docs/") && name === "@governor/core"),
    );
    expect(missing).toEqual([]);
  });

  it("reads imports and install lines as written", () => {
    const md = [
      "```ts",
      'import { a } from "@scope/pkg/sub";',
      'import b from "plain/x.js";',
      'import { c } from "node:fs";',
      'import { d } from "./local.ts";',
      "```",
      "```sh",
      "npm i @scope/pkg@~1.2.3 other zod   # plain is not here",
      "```",
    ].join("\n");
    const { imported, installed } = importsAndInstalls(md);
    expect([...imported]).toEqual(["@scope/pkg", "plain"]);
    expect([...installed]).toEqual(["npm", "i", "@scope/pkg", "other", "zod"]);
  });
});
