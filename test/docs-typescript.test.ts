/**
 * Issue 29: every TypeScript block of README.md, docs/*.md and packages/*\/README.md compiles, as a
 * reader would paste it (strict, against the workspace's packages).
 *
 * A block's info string says how it is compiled:
 * - ` ```ts `: a module of its own: it imports what it uses and declares (`declare const …`) what
 *   is the reader's own;
 * - ` ```ts continued `: the previous block of the same file, with this one after it (a guide that
 *   builds one program over several blocks);
 * - ` ```ts fragment `: not compiled (a line or two shown inside prose). Keep these few.
 *
 * The blocks are compiled in one program, in memory: each as a file beside its document (a block
 * of docs/<adapter>.md beside packages/<adapter>, where that adapter's SDKs are installed), so
 * imports resolve as they would in the reader's project. A failure names the document and the line
 * of the document each error is on.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** How many `ts fragment` blocks the docs may hold in all: a fragment is a block nobody checks. */
const MAX_FRAGMENTS = 6;

/** The documents whose blocks are checked, relative to the root. */
function documents(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`);
  const readmes = readdirSync(join(ROOT, "packages"))
    .map((p) => `packages/${p}/README.md`)
    .filter((f) => existsSync(join(ROOT, f)));
  return ["README.md", ...docs.sort(), ...readmes.sort()];
}

/** One fenced block: its kind and its text, with the document line its first text line is on. */
interface Block {
  readonly doc: string;
  readonly line: number;
  readonly kind: "module" | "continued" | "fragment";
  readonly text: string;
}

const KINDS: Record<string, Block["kind"]> = {
  ts: "module",
  "ts continued": "continued",
  "ts fragment": "fragment",
};

function blocksOf(doc: string, markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S.*)?$/.exec(lines[i] as string);
    if (open === null) continue;
    const info = (open[1] ?? "").trim();
    const end = lines.findIndex((l, j) => j > i && l.startsWith("```"));
    if (end < 0) throw new Error(`${doc}:${i + 1}: a fenced block that is never closed`);
    if (/^(ts|typescript)\b/.test(info)) {
      const kind = KINDS[info];
      if (kind === undefined) {
        throw new Error(
          `${doc}:${i + 1}: unknown info string ${JSON.stringify(info)}; accepted: ${Object.keys(KINDS).join(", ")}`,
        );
      }
      blocks.push({ doc, line: i + 2, kind, text: lines.slice(i + 1, end).join("\n") });
    }
    i = end;
  }
  return blocks;
}

/** A compiled unit: one block, or a block with the `continued` ones after it. */
interface Unit {
  readonly file: string;
  readonly doc: string;
  readonly parts: { readonly firstLine: number; readonly docLine: number }[];
  text: string;
}

/** Where a document's blocks are compiled from: beside the package whose SDKs they use. */
function homeOf(doc: string): string {
  const adapter = /^docs\/([a-z-]+)\.md$/.exec(doc)?.[1];
  if (adapter !== undefined && existsSync(join(ROOT, "packages", adapter, "package.json"))) {
    return join(ROOT, "packages", adapter);
  }
  return join(ROOT, dirname(doc));
}

function unitsOf(blocks: readonly Block[]): { units: Unit[]; fragments: Block[] } {
  const units: Unit[] = [];
  const fragments: Block[] = [];
  let last: Unit | undefined;
  for (const block of blocks) {
    if (block.kind === "fragment") {
      fragments.push(block);
      continue;
    }
    if (block.kind === "continued") {
      if (last === undefined || last.doc !== block.doc) {
        throw new Error(
          `${block.doc}:${block.line - 1}: "ts continued" with no ts block before it`,
        );
      }
      last.parts.push({ firstLine: last.text.split("\n").length, docLine: block.line });
      last.text += `\n${block.text}`;
      continue;
    }
    const name = `${block.doc.replace(/[/.]/g, "_")}_L${block.line}.ts`;
    last = {
      file: join(homeOf(block.doc), "__docs_blocks__", name),
      doc: block.doc,
      parts: [{ firstLine: 0, docLine: block.line }],
      text: block.text,
    };
    units.push(last);
  }
  // A block without import or export would be a script sharing one global scope with the others.
  for (const unit of units) unit.text += "\nexport {};\n";
  return { units, fragments };
}

/** The document line of a 0-based line of a unit. */
function docLine(unit: Unit, line: number): number {
  const part = unit.parts.findLast((p) => p.firstLine <= line) ?? unit.parts[0];
  return (part?.docLine ?? 0) + line - (part?.firstLine ?? 0);
}

function compile(units: readonly Unit[]): Map<string, string[]> {
  const config = ts.readConfigFile(join(ROOT, "tsconfig.base.json"), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  // The workspace's @governor/* resolve to their sources (the "source" condition, as in
  // tsconfig.json): no build needed.
  options.noEmit = true;
  // A reader's project need not emit declarations (which would ask exported values for types
  // nameable from the reader's own dependencies).
  options.declaration = false;
  const byFile = new Map(units.map((u) => [u.file, u]));
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (f) => byFile.has(f) || fileExists.call(host, f);
  host.readFile = (f) => byFile.get(f)?.text ?? readFile.call(host, f);
  host.getSourceFile = (f, language, onError, create) => {
    const unit = byFile.get(f);
    return unit === undefined
      ? getSourceFile.call(host, f, language, onError, create)
      : ts.createSourceFile(f, unit.text, language, true);
  };
  const program = ts.createProgram([...byFile.keys()], options, host);
  const problems = new Map<string, string[]>();
  for (const d of ts.getPreEmitDiagnostics(program)) {
    const unit = d.file === undefined ? undefined : byFile.get(d.file.fileName);
    const text = ts.flattenDiagnosticMessageText(d.messageText, "\n  ");
    if (unit === undefined || d.file === undefined || d.start === undefined) {
      // Not in a block (a package's own declarations): name it all the same.
      const where = d.file === undefined ? "(no file)" : relative(ROOT, d.file.fileName);
      problems.set("(outside the docs)", [
        ...(problems.get("(outside the docs)") ?? []),
        `${where}: TS${d.code} ${text}`,
      ]);
      continue;
    }
    const { line } = d.file.getLineAndCharacterOfPosition(d.start);
    const fence = (unit.parts[0]?.docLine ?? 1) - 1;
    const list = problems.get(unit.doc) ?? [];
    list.push(
      `${unit.doc}:${docLine(unit, line)} (block opened at line ${fence}): TS${d.code} ${text}`,
    );
    problems.set(unit.doc, list);
  }
  // In document order (the program reports them file by file, not line by line).
  const lineOf = (p: string) => Number(/^[^:]+:(\d+)/.exec(p)?.[1] ?? 0);
  for (const list of problems.values()) list.sort((a, b) => lineOf(a) - lineOf(b));
  return problems;
}

const docs = documents();
const blocks = docs.flatMap((doc) => blocksOf(doc, readFileSync(join(ROOT, doc), "utf8")));
const { units, fragments } = unitsOf(blocks);

describe("every TypeScript block of the docs compiles", () => {
  let problems: Map<string, string[]>;
  beforeAll(() => {
    problems = compile(units);
  }, 180_000);

  it("finds the blocks: at least one in README.md and in most guides", () => {
    expect(units.filter((u) => u.doc === "README.md").length).toBeGreaterThan(0);
    expect(new Set(units.map((u) => u.doc)).size).toBeGreaterThan(10);
  });

  it.each(docs)("%s", (doc) => {
    expect(problems.get(doc) ?? [], `TypeScript errors in ${doc}'s blocks`).toEqual([]);
  });

  it("nothing outside the blocks fails to compile", () => {
    expect(problems.get("(outside the docs)") ?? []).toEqual([]);
  });

  it(`marks at most ${MAX_FRAGMENTS} blocks "ts fragment" (not compiled)`, () => {
    const where = fragments.map((f) => `${f.doc}:${f.line - 1}`).join(", ");
    expect(fragments.length, `fragments: ${where}`).toBeLessThanOrEqual(MAX_FRAGMENTS);
  });
});

describe("the block reader", () => {
  it("names a document line for an error in a continued block", () => {
    const md = [
      "# x",
      "```ts",
      "const a = 1;",
      "```",
      "text",
      "```ts continued",
      "const b: string = a;",
      "```",
    ].join("\n");
    const {
      units: [unit],
    } = unitsOf(blocksOf("docs/x.md", md));
    expect(unit?.text.split("\n")[1]).toBe("const b: string = a;");
    expect(docLine(unit as Unit, 1)).toBe(7);
    expect(docLine(unit as Unit, 0)).toBe(3);
  });

  it("leaves a ts fragment out of the program, and counts it", () => {
    const md = ["```ts fragment", "notDeclared();", "```", "```ts", "const b = 2;", "```"].join(
      "\n",
    );
    const read = unitsOf(blocksOf("docs/x.md", md));
    expect(read.fragments.map((f) => f.line)).toEqual([2]);
    expect(read.units.map((u) => u.text)).toEqual(["const b = 2;\nexport {};\n"]);
  });

  it("refuses an unknown info string, with the ones accepted", () => {
    expect(() => blocksOf("docs/x.md", "```ts snippet\nx\n```")).toThrow(
      'docs/x.md:1: unknown info string "ts snippet"; accepted: ts, ts continued, ts fragment',
    );
  });
});
