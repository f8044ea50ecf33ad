/**
 * The files `pnpm gen` writes from code, and what each must hold: the reasons table of
 * docs/stop-reasons.md (from the records of packages/core/src/reasons.ts, between two marker
 * comments; the rest of the page is written by hand) and packages/core/policy.schema.json (the
 * JSON Schema of the policy's zod schema, packages/core/src/policy/policy.ts). scripts/gen.ts
 * writes or checks them; test/generated.test.ts fails when a checked-in one is stale.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { policyJsonSchema } from "../packages/core/src/policy/policy.ts";
import { REASON_INFO, type Reason } from "../packages/core/src/reasons.ts";

/** One generated file: where it lives in the repository and how it is made. */
export interface GeneratedFile {
  /** Its path from the repository's root, with `/`. */
  readonly path: string;
  /** The code it is made from, for messages. */
  readonly source: string;
  /** Its full text, given the text it has now (absent: it does not exist yet). */
  render(current: string | undefined): string;
}

/** The comment lines around the generated part of docs/stop-reasons.md. */
export const REASONS_START =
  "<!-- reasons table: written by `pnpm gen` from packages/core/src/reasons.ts; edit the records there -->";
export const REASONS_END = "<!-- end of the reasons table -->";

/** A Markdown table with its columns padded to their widest cell, as the docs' tables are. */
function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => c.padEnd(widths[i] as number)).join(" | ")} |`;
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}

/** The reasons table, and the breaker's rule read from the same records. */
export function reasonsSection(): string {
  const reasons = Object.keys(REASON_INFO) as Reason[];
  const rows = reasons.map((reason) => {
    const info = REASON_INFO[reason];
    const certainty = info.certainty === "failed" ? "" : ` (certainty \`${info.certainty}\`)`;
    return [`\`${reason}\``, info.action, `${info.doc}${certainty}`, info.personDoc];
  });
  const always = reasons.filter((r) => REASON_INFO[r].breaker === "always");
  const table = markdownTable(
    ["reason", "usual action", "meaning", "a person can resolve it"],
    rows,
  );
  const breaker = `A tool's breaker counts every failure whose decision retries the dependency, whatever its reason, and ${always.map((r) => `\`${r}\``).join(", ")} whatever its action.`;
  return `${table}\n\n${wrap(breaker, 100)}`;
}

/** `text` broken between words into lines of at most `width` characters, as the docs are. */
function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line !== "" && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  return [...lines, line].join("\n");
}

/** `current` with the text between the reasons markers replaced by `section`. */
function betweenMarkers(path: string, current: string | undefined, section: string): string {
  if (current === undefined) throw new Error(`${path} is missing: pnpm gen writes only its table`);
  const start = current.indexOf(`${REASONS_START}\n`);
  const end = current.indexOf(`\n${REASONS_END}`);
  if (start < 0 || end < start) {
    throw new Error(
      `${path} lacks the marker lines around its reasons table: a line "${REASONS_START}" before it and a line "${REASONS_END}" after it`,
    );
  }
  return `${current.slice(0, start + REASONS_START.length + 1)}${section}${current.slice(end)}`;
}

/** Every file `pnpm gen` writes. */
export const GENERATED: readonly GeneratedFile[] = [
  {
    path: "docs/stop-reasons.md",
    source: "packages/core/src/reasons.ts",
    render: (current) => betweenMarkers("docs/stop-reasons.md", current, reasonsSection()),
  },
  {
    path: "packages/core/policy.schema.json",
    source: "packages/core/src/policy/policy.ts",
    render: () => `${JSON.stringify(policyJsonSchema(), null, 2)}\n`,
  },
];

/** One generated file as it is in `root` and as it should be. */
export interface GeneratedState {
  readonly file: GeneratedFile;
  readonly current: string | undefined;
  readonly expected: string;
}

/** Each generated file of the repository at `root`: what it holds and what it should hold. */
export function generatedStates(root: string): GeneratedState[] {
  return GENERATED.map((file) => {
    const at = join(root, file.path);
    const current = existsSync(at) ? readFileSync(at, "utf8") : undefined;
    return { file, current, expected: file.render(current) };
  });
}

/** The first line where `current` and `expected` differ, for a message; undefined when equal. */
export function firstDifference(current: string | undefined, expected: string): string | undefined {
  if (current === expected) return undefined;
  if (current === undefined) return "the file does not exist";
  const a = current.split("\n");
  const b = expected.split("\n");
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `line ${i + 1} is ${JSON.stringify(a[i] ?? "(end of file)")}, should be ${JSON.stringify(b[i] ?? "(end of file)")}`;
}
