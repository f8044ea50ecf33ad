/**
 * Writes the hard fingerprint pairs of test/corpus/fingerprint-pairs.jsonl (ids `hard-N`; the
 * hand-made pairs stay as they are) from the corpus templates (issue 27.5): each template's value
 * placeholders filled twice with values of one kind — a word, a slug, a list, a duration — and
 * the whole text wrapped in a JSON error body with two words: the same template, which must share
 * a fingerprint. And different templates of one server filled with the same values, which must
 * not. Each word, slug and list pair is written again with the arguments each call sent (`argsA`,
 * `argsB`, one per placeholder, named after it: `hard-args`, `hard-different-args`), after the
 * others. Deterministic: values are picked by position, not at random.
 *
 * Usage: node --import tsx scripts/fingerprint-hard-pairs.ts
 */
import { readFileSync, writeFileSync } from "node:fs";

const DIR = new URL("../test/corpus/", import.meta.url);
interface Line {
  readonly id: string;
  readonly server: string;
  readonly source: string;
  readonly tool: string;
  readonly template?: string;
}
const read = (file: string) =>
  readFileSync(new URL(file, DIR), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as Line);

const PLACEHOLDER = /\$\{[^}]*\}|(?<![{$])\{[a-zA-Z_][\w.[\]'"()!]*\}|%[sdvqw]|<[a-zA-Z_][\w ]*>/g;
/** Placeholders that hold a whole message, a status or a code: what fills them is a condition. */
const CONDITION =
  /message|error|err\b|e!r|^\W*e\W*$|stderr|detail|reason|msg|response|status|code|text|body|exc|cause|str\(/i;
const LISTY =
  /join|list|files|items|ids|names|allowed|options|choices|values|tools|keys|fields|scopes/i;
const DURATION_NAME =
  /timeout|duration|elapsed|delay|wait|seconds|\bms\b|ttl|interval|retry_?after/i;
/** Placeholders whose values the normalizer reads by their shape: filled with values of that shape. */
const URL_NAME = /url|uri|href|link|endpoint/i;
const PATH_NAME = /path|file|dir|src|dst|folder|parent/i;
const NUMBER_NAME =
  /\b(?:n|count|max|min|limit|attempts|size|bytes|length|port|total|num|maxBytes|contentLength)\b|%d/i;
const SHAPED: readonly (readonly [RegExp, readonly [string, string]])[] = [
  [URL_NAME, ["https://api.example.com/v1/orders", "https://example.org/a/b?c=1"]],
  [PATH_NAME, ["/srv/app/data/orders.csv", "/home/ana/notes/todo.md"]],
  [NUMBER_NAME, ["25", "1000"]],
];
/** A Go or C verb after `failed: ` or `error: ` carries the error's own message. */
const MESSAGE_VERB = /(?:failed|error|err):? %[sv]/i;

const VALUES: Record<string, readonly (readonly [string, string])[]> = {
  word: [
    ["orders", "invoices"],
    ["staging", "production"],
    ["Cecil", "muriel"],
    ["GROUP", "LIMT"],
    ["alice", "bob"],
  ],
  slug: [
    ["api-gateway", "billing_v2"],
    ["team-platform-eu", "orders_2024_q3"],
    ["feature/login-fix", "release-1.4"],
    ["my-bucket-01", "prod_logs"],
  ],
  list: [
    ["a, b", "x, y, z"],
    ["read, write", "admin"],
    ["orders, invoices, refunds", "customers"],
  ],
  duration: [
    ["30s", "2m15s"],
    ["1.5 seconds", "250ms"],
    ["10 minutes", "45s"],
  ],
};

function fill(template: string, pick: (name: string) => string): string | undefined {
  let filled = false;
  let conditionLeft = false;
  const out = template.replace(PLACEHOLDER, (p) => {
    if (CONDITION.test(p)) {
      conditionLeft = true;
      return "boom";
    }
    filled = true;
    return pick(p);
  });
  return filled && !conditionLeft ? out.replace(/\\n/g, "\n") : undefined;
}

const lines = [...read("tool-errors.jsonl"), ...read("unseen-tool-errors.jsonl")];
const templates = new Map<string, Line>();
for (const l of lines) {
  if (l.template !== undefined && PLACEHOLDER.test(l.template) && !templates.has(l.template)) {
    templates.set(l.template, l);
  }
  PLACEHOLDER.lastIndex = 0;
}

interface Pair {
  id: string;
  server: string;
  source: string;
  tool: string;
  a: string;
  b: string;
  same: boolean;
  kind: string;
  argsA?: Record<string, string>;
  argsB?: Record<string, string>;
}
const pairs: Omit<Pair, "id">[] = [];
/** Pairs with the arguments of each call, written after the others (the ids before stay). */
const withArgs: Omit<Pair, "id">[] = [];

/** The argument a placeholder stands for: its name (`${table}` → `table`), else its place. */
function argName(placeholder: string, args: Record<string, string>): string {
  const name = /[A-Za-z_]\w*/.exec(placeholder.replace(/^[%$]/, ""))?.[0];
  return name !== undefined && !/^[sdvqw]$/.test(name)
    ? name
    : `arg${Object.keys(args).length + 1}`;
}

/** `pick`, writing each value it gives into `args` under the placeholder's name. */
function recording(pick: (p: string) => string, args: Record<string, string>) {
  return (p: string) => {
    const value = pick(p);
    args[argName(p, args)] = value;
    return value;
  };
}
let n = 0;
const entries = [...templates.values()];
for (const [i, line] of entries.entries()) {
  const template = line.template as string;
  if (MESSAGE_VERB.test(template)) continue;
  // A list where the template joins one, a duration where it names one; else a word or a slug.
  const names = template.match(PLACEHOLDER) ?? [];
  const listy = names.some((p) => LISTY.test(p));
  const timed = names.some((p) => DURATION_NAME.test(p));
  const kind = listy ? "list" : timed ? "duration" : (["word", "slug"][i % 2] as string);
  const values = VALUES[kind] as readonly (readonly [string, string])[];
  const [va, vb] = values[i % values.length] as readonly [string, string];
  const words = VALUES.word as readonly (readonly [string, string])[];
  const [wa, wb] = words[i % words.length] as readonly [string, string];
  // Each placeholder gets a value of its own kind: a list for a list, a duration for a duration,
  // a word for the others.
  const side = (first: boolean) => (p: string) => {
    const shaped = SHAPED.find(([re]) => re.test(p))?.[1];
    if (shaped !== undefined && !LISTY.test(p) && !DURATION_NAME.test(p)) {
      return first ? shaped[0] : shaped[1];
    }
    return (listy && LISTY.test(p)) || (timed && DURATION_NAME.test(p))
      ? first
        ? va
        : vb
      : kind === "slug"
        ? first
          ? va
          : vb
        : first
          ? wa
          : wb;
  };
  const argsA: Record<string, string> = {};
  const argsB: Record<string, string> = {};
  const a = fill(template, recording(side(true), argsA));
  const b = fill(template, recording(side(false), argsB));
  if (a === undefined || b === undefined || a === b) continue;
  const base = { server: line.server, source: line.source, tool: line.tool };
  pairs.push({ ...base, a, b, same: true, kind: `hard-${kind}` });
  // The same pair with the arguments the model sent: a word of them in the text is its value.
  if (kind !== "duration") {
    withArgs.push({ ...base, a, b, argsA, argsB, same: true, kind: "hard-args" });
  }
  // The same text wrapped in a JSON error body, as APIs pass it through.
  if (n++ % 3 === 0) {
    const wrap = (t: string, id: number) =>
      JSON.stringify({
        error: { code: "request_failed", message: t, request_id: `req_${id}8f3a` },
      });
    pairs.push({ ...base, a: wrap(a, 1), b: wrap(b, 2), same: true, kind: "hard-json-wrapped" });
  }
  // Another template of the same server, filled with the same value: a different failure.
  const other = entries.find(
    (o, j) => j > i && o.server === line.server && o.template !== template,
  );
  const argsC: Record<string, string> = {};
  const c = other && fill(other.template as string, recording(side(true), argsC));
  if (c !== undefined && c !== a) {
    pairs.push({ ...base, a, b: c, same: false, kind: "hard-different" });
    // With their arguments, two templates must still stay apart.
    if (kind !== "duration") {
      withArgs.push({
        ...base,
        a,
        b: c,
        argsA,
        argsB: argsC,
        same: false,
        kind: "hard-different-args",
      });
    }
  }
}

const file = new URL("fingerprint-pairs.jsonl", DIR);
const kept = readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "" && !(JSON.parse(l) as Pair).id.startsWith("hard-"));
const made = [...pairs, ...withArgs].map((p, i) => JSON.stringify({ id: `hard-${i + 1}`, ...p }));
writeFileSync(file, `${[...kept, ...made].join("\n")}\n`);
process.stdout.write(
  `${made.length} hard pairs (${pairs.filter((p) => p.same).length} same, ${pairs.filter((p) => !p.same).length} different, ${withArgs.length} of them again with arguments)\n`,
);
