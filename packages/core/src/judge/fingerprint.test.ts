import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hasNestedUnboundedQuantifier } from "../../../../test/support/regex-safety.ts";
import type { Channel } from "../types.ts";
import {
  type FingerprintInput,
  fingerprint,
  NORMALIZE_PATTERNS,
  normalizeText,
  ORIGINAL_TEXT_PATTERNS,
} from "./fingerprint.ts";
import { foldValues } from "./fingerprint-fold.ts";

// ---------------------------------------------------------------------------------------------
// Slot values: what varies between occurrences of the same failure

const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const HEX = "0123456789abcdef";
const chars = (alphabet: string, minLength: number, maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength });

const uuid = fc.uuid();
const hexId = fc
  .tuple(chars(HEX, 6, 40), fc.constantFrom(...DIGITS))
  .map(([h, d]) => `${h.slice(0, 3)}${d}${h.slice(3)}`);
const integer = fc.nat().map(String);
const decimal = fc.tuple(fc.nat(100_000), fc.nat(999)).map(([a, b]) => `${a}.${b}`);
const id = fc.oneof(uuid, hexId, integer);
const count = fc.oneof(integer, decimal);
const duration = fc
  .tuple(
    fc.oneof(integer, decimal),
    fc.constantFrom("ms", "s", " seconds", " ms", "m", " minutes", "h"),
  )
  .map(([n, u]) => n + u);
const segment = chars(`${LOWER}${DIGITS}._-`, 1, 12).map((s) => `s${s}`);
const posixPath = fc
  .tuple(fc.constantFrom("/", "~/", "./", "../"), fc.array(segment, { minLength: 1, maxLength: 6 }))
  .map(([root, parts]) => root + parts.join("/"));
const windowsPath = fc
  .tuple(
    fc.constantFrom("C:\\", "D:\\", "\\\\server\\"),
    fc.array(segment, { minLength: 1, maxLength: 5 }),
  )
  .map(([root, parts]) => root + parts.join("\\"));
const path = fc.oneof(posixPath, windowsPath);
const label = chars(`${LOWER}${DIGITS}-`, 0, 10).map((s) => `h${s}x`);
const host = fc
  .tuple(
    fc.array(label, { minLength: 1, maxLength: 3 }),
    fc.constantFrom("com", "io", "net", "internal", "dev"),
  )
  .map(([labels, tld]) => [...labels, tld].join("."));
const url = fc
  .tuple(
    fc.constantFrom("http", "https", "wss"),
    host,
    fc.option(fc.integer({ min: 1, max: 65535 })),
    fc.array(segment, { maxLength: 4 }),
    fc.option(fc.array(fc.tuple(segment, segment), { minLength: 1, maxLength: 3 })),
  )
  .map(
    ([scheme, h, port, parts, query]) =>
      `${scheme}://${h}${port === null ? "" : `:${port}`}/${parts.join("/")}${
        query === null ? "" : `?${query.map(([k, v]) => `${k}=${v}`).join("&")}`
      }`,
  );
const email = fc
  .tuple(chars(`${LOWER}${DIGITS}._+-`, 0, 12), host)
  .map(([local, h]) => `u${local}@${h}`);
const timestamp = fc
  .tuple(
    fc.integer({ min: 0, max: 4_000_000_000_000 }),
    fc.constantFrom("iso", "date", "space", "clock"),
  )
  .map(([ms, form]) => {
    const iso = new Date(ms).toISOString();
    if (form === "date") return iso.slice(0, 10);
    if (form === "space") return `${iso.slice(0, 10)} ${iso.slice(11, 19)}`;
    if (form === "clock") return iso.slice(11, 19);
    return iso;
  });
const ipv4 = fc.ipV4();
const port = fc.integer({ min: 1, max: 65535 }).map(String);
/** A quoted slot's content: anything on one line without a quote character (it would end the value). */
const quoted = fc.string({ maxLength: 80 }).map((s) => s.replace(/["'`“”‘’\n\r\\]/g, ""));
const token = fc
  .tuple(chars(LOWER + DIGITS, 18, 40), fc.constantFrom(...DIGITS), fc.constantFrom(...LOWER))
  .map(([t, d, l]) => `${l}${t}${d}`);

type Slot = fc.Arbitrary<string>;

/** Message templates; `{}` is a slot filled by the generator at the same index. */
const TEMPLATES: readonly (readonly [string, readonly Slot[]])[] = [
  ['no note with id "{}". Use one of: welcome, release-notes', [quoted]],
  ["MCP error -32602: Tool '{}' not found", [quoted]],
  ["Order {} not found", [id]],
  ["Invoice {} was already paid", [id]],
  ["Rate limit exceeded, retry after {}", [duration]],
  ["ENOENT: no such file or directory, open '{}'", [path]],
  ["cannot read {}: permission denied", [path]],
  ["request to {} failed, reason: socket hang up", [url]],
  ["user {} is not a member of this workspace", [email]],
  ["token expired at {}", [timestamp]],
  ["connect ECONNREFUSED {}:{}", [ipv4, port]],
  ["getaddrinfo ENOTFOUND {}", [host]],
  ["Input validation error: field `{}` must be at most {} characters", [quoted, integer]],
  ["deadline of {} exceeded after {} attempts", [duration, count]],
  ["job {} failed after {} retries", [token, integer]],
  ["limit={} offset={} is out of range", [count, count]],
  ["lock on {} held by {} since {}", [path, host, timestamp]],
  ["upload of {} bytes to {} timed out after {}", [integer, url, duration]],
];

function fill(template: string, values: readonly string[]): string {
  let i = 0;
  return template.replace(/\{\}/g, () => values[i++] ?? "");
}

const templateIndex = fc.nat(TEMPLATES.length - 1);
const filled = (index: number) => {
  const [template, slots] = TEMPLATES[index] as (typeof TEMPLATES)[number];
  return fc.tuple(...slots).map((values) => fill(template, values));
};
/** Two independent fillings of the same template. */
const sameTemplatePair = templateIndex.chain((index) =>
  fc.tuple(filled(index), filled(index)).map(([a, b]) => ({ index, a, b })),
);

const CHANNELS: readonly Channel[] = ["tool", "protocol", "local"];
const tool = fc.constantFrom("get_note", "search", "create_issue", "fetch_url");
const channel = fc.constantFrom(...CHANNELS);
const code = fc.option(
  fc.oneof(fc.integer({ min: -32768, max: -32000 }), fc.constantFrom("ECONNRESET", "ETIMEDOUT")),
  {
    nil: undefined,
  },
);

function input(
  toolName: string,
  ch: Channel,
  c: number | string | undefined,
  text: string,
): FingerprintInput {
  return c === undefined
    ? { tool: toolName, channel: ch, text }
    : { tool: toolName, channel: ch, code: c, text };
}

// ---------------------------------------------------------------------------------------------

describe("fingerprint: harder values (issue 12)", () => {
  const fp = (text: string) => fingerprint({ tool: "t", channel: "tool", text });
  const same = (a: string, b: string) =>
    expect(fp(a), `${normalizeText(a)} / ${normalizeText(b)}`).toBe(fp(b));
  const apart = (a: string, b: string) => expect(fp(a), normalizeText(a)).not.toBe(fp(b));

  it("values that are slugs, words or names share a fingerprint", () => {
    same("no such index [logs-app]", "no such index [metrics-2025.01.07]");
    same(
      "Invalid arguments for perplexity_ask: 'messages' must be an array",
      "Invalid arguments for perplexity_research: 'messages' must be an array",
    );
    same(
      "Table with name orderz does not exist!\nLINE 1: SELECT * FROM orderz",
      "Table with name customer does not exist!\nLINE 1: SELECT * FROM customer",
    );
    same("ReferenceError: jQuery is not defined", "ReferenceError: myApp is not defined");
    same(
      "Error getting object info: Object not found: Camera Main",
      "Error getting object info: Object not found: Cube.001",
    );
    same("lock held by user ana.", "lock held by user root.");
    same(
      "rejected on EsThreadPoolExecutor[name = es-data-2/search, queue capacity = 1000]",
      "rejected on EsThreadPoolExecutor[name = instance-7, queue capacity = 1000]",
    );
  });

  it("keys of colons, Go durations, sizes, paths with spaces and lists of any length", () => {
    same("cache miss for cache:user:42", "cache miss for cache:session:9f3a");
    same(
      "Insufficient scope, expected any of: read:clients",
      "Insufficient scope, expected any of: read:clients,read:client_summary",
    );
    same("retry in 1m30s", "retry in 2m0.5s");
    same("could not allocate block of size 256.0 KiB", "could not allocate block of size 16.0 MiB");
    same(
      "stat /data/Quarterly Report.xlsx: no such file or directory",
      "stat /data/notes.md: no such file or directory",
    );
    same(
      "Path not allowed: /etc/hosts. Must be within one of these directories: /a, /b",
      "Path not allowed: /x. Must be within one of these directories: /c",
    );
    same("getaddrinfo ENOTFOUND es.internal.example", "getaddrinfo ENOTFOUND elasticsearch");
  });

  it("relative paths: three segments, or two with a file extension; two words around a slash stay", () => {
    same(
      "No such key: exports/2024/q3.csv in bucket acme",
      "No such key: img/logo.png in bucket acme",
    );
    same("blob main/src/components/Button.tsx not found", "blob dev/README.md not found");
    apart("Value must be true/false", "Value must be read/write");
    apart(
      "Content-Type application/json is not supported",
      "Content-Type text/html is not supported",
    );
    // A path with a space in a directory name is still one path.
    same(
      "Access denied: /Users/li wei/Library/login.keychain-db",
      "Access denied: /home/ana/.ssh/id_ed25519",
    );
  });

  it("an upstream message in JSON stays, with its values normalized", () => {
    same(
      '{"message":"Rate limit exceeded. Please try again in 20s."}',
      '{"message":"Rate limit exceeded. Please try again in 1m30s."}',
    );
    apart(
      'Failed: {"message":"You have reached your monthly limit."}',
      'Failed: {"message":"Too Many Requests"}',
    );
    apart(
      `returned "Invalid To header". Details: "[{'message': 'Invalid To header', 'reason': 'invalidArgument'}]"`,
      `returned "Precondition check failed.". Details: "[{'message': 'Precondition check failed.', 'reason': 'failedPrecondition'}]"`,
    );
    // A one-word message is a value.
    same('{"message": "drafts"}', '{"message": "inbox"}');
  });

  it("condition identifiers stay: error vocabulary, capitals, condition keys", () => {
    apart("type: rate_limit_exceeded", "type: insufficient_quota");
    apart("getaddrinfo EAI_AGAIN api.example.com", "getaddrinfo ENOTFOUND api.example.com");
    apart("error: index_not_found_exception", "error: parsing_exception");
    apart("Network error (UND_ERR_SOCKET)", "Network error (UND_ERR_BODY_TIMEOUT)");
    expect(normalizeText("error: customer_orders failed")).toBe("error: <v> failed");
    expect(normalizeText("code=e_bad kind=my_thing")).toBe("code=e_bad kind=my_thing");
    expect(normalizeText("messages[0].text")).toBe("messages[<id>].text");
  });
});

describe("fingerprint: properties", () => {
  it("fillings of one template share a fingerprint", () => {
    fc.assert(
      fc.property(sameTemplatePair, tool, channel, code, ({ a, b }, t, ch, c) => {
        const fa = fingerprint(input(t, ch, c, a));
        const fb = fingerprint(input(t, ch, c, b));
        if (fa !== fb) {
          throw new Error(
            `${JSON.stringify(normalizeText(a))} !== ${JSON.stringify(normalizeText(b))}`,
          );
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("different templates have different fingerprints", () => {
    fc.assert(
      fc.property(templateIndex, templateIndex, tool, channel, code, (i, j, t, ch, c) => {
        fc.pre(i !== j);
        return fc.assert(
          fc.property(filled(i), filled(j), (a, b) => {
            expect(fingerprint(input(t, ch, c, a))).not.toBe(fingerprint(input(t, ch, c, b)));
          }),
          { numRuns: 5 },
        );
      }),
      { numRuns: 300 },
    );
  });

  it("a different tool, channel or code changes the fingerprint", () => {
    fc.assert(
      fc.property(
        templateIndex.chain(filled),
        tool,
        tool,
        channel,
        channel,
        code,
        code,
        (text, t1, t2, c1, c2, k1, k2) => {
          fc.pre(t1 !== t2 || c1 !== c2 || k1 !== k2);
          expect(fingerprint(input(t1, c1, k1, text))).not.toBe(
            fingerprint(input(t2, c2, k2, text)),
          );
        },
      ),
      { numRuns: 1000 },
    );
  });

  it("is 16 lowercase hex characters and deterministic", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 2000 }),
        tool,
        channel,
        code,
        (text, t, ch, c) => {
          const first = fingerprint(input(t, ch, c, text));
          expect(first).toMatch(/^[0-9a-f]{16}$/);
          expect(fingerprint(input(t, ch, c, text))).toBe(first);
        },
      ),
      { numRuns: 500 },
    );
  });

  it("normalized text is bounded", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 5000 }), (text) => {
        expect(normalizeText(text).length).toBeLessThanOrEqual(500);
      }),
      { numRuns: 300 },
    );
  });
});

describe("fingerprint: examples", () => {
  it("pins a known value (stable across processes and versions)", () => {
    expect(
      fingerprint({
        tool: "get_note",
        channel: "tool",
        code: -32602,
        text: 'No note with id "drafts"',
      }),
    ).toBe("f060b9ba93ef244d");
    expect(
      fingerprint({ tool: "get_note", channel: "tool", text: 'no note with id "drafts"' }),
    ).toBe("55cc4e7b95234a6e");
  });

  it("hashes the documented form: sha256 of the JSON array [tool, channel, code ?? null, normalized and folded]", () => {
    const payload = JSON.stringify([
      "get_note",
      "tool",
      null,
      foldValues(normalizeText('no note with id "drafts"')),
    ]);
    expect(createHash("sha256").update(payload).digest("hex").slice(0, 16)).toBe(
      fingerprint({ tool: "get_note", channel: "tool", text: 'no note with id "drafts"' }),
    );
  });

  it("5 and '5' are different codes; a missing code is neither", () => {
    const base = { tool: "t", channel: "tool" as const, text: "x" };
    const all = new Set([
      fingerprint(base),
      fingerprint({ ...base, code: 5 }),
      fingerprint({ ...base, code: "5" }),
    ]);
    expect(all.size).toBe(3);
  });

  it.each([
    ['MCP error -32602: MCP error -32602: Tool "x" not found', "tool <str> not found"],
    ["No note with id 'drafts' (took 31ms)", "no note with id <str> (took <dur>)"],
    ["order 3f9a8b7c-1d2e-4f5a-8b9c-0d1e2f3a4b5c not found", "order <id> not found"],
    ["commit 3f9a8b7 missing; sha deadbeef stays", "commit <id> missing; sha deadbeef stays"],
    [
      "failed at 2024-01-15T10:30:00.123Z and Mon, 15 Jan 2024 10:30:00 GMT",
      "failed at <time> and <time>",
    ],
    ["open /home/bob/notes/a.md: denied", "open <path> denied"],
    ["open C:\\Users\\bob\\a.md and \\\\srv\\share\\x", "open <path> and <path>"],
    ["GET https://api.example.com/v1/notes?page=2 failed", "get <url> failed"],
    ["mail bob@example.com bounced", "mail <email> bounced"],
    ["connect ECONNREFUSED 10.0.0.1:5432", "connect econnrefused <ip>:<id>"],
    ["resolve db-01.prod.example.com failed", "resolve <host> failed"],
    ["retry in 30s, then 1.5 minutes", "retry in <dur>, then <dur>"],
    ["limit=50 cursor=abc", "limit=<v> cursor=<v>"],
    ["code=not_found reason=rate_limited id=7", "code=not_found reason=rate_limited id=<v>"],
    ['code="not_found" name="x"', 'code="not_found" name=<v>'],
    [
      '{"error":"rate_limited","id":"n-1","count":3}',
      '{"error":"rate_limited","id":<str>,"count":<id>}',
    ],
    ['field "email": must be valid', "field <str>: must be valid"],
    ["HTTP 503 from upstream; status: 429", "http 503 from upstream; status: 429"],
    ["utf8 ipv4 base64 sha256", "utf8 ipv4 base64 sha<id>"],
    ["job a1b2c3d4e5f6g7h8i9 failed", "job <id> failed"],
    ["  lots \n of\t space  ", "lots of space"],
  ])("%s", (text, expected) => {
    expect(normalizeText(text)).toBe(expected);
  });

  it("examples of one failure share a fingerprint", () => {
    const fp = (text: string) => fingerprint({ tool: "get_note", channel: "tool", text });
    expect(fp('no note with id "drafts"')).toBe(fp('MCP error -32602: No note with id "inbox"'));
    expect(fp("HTTP 503: upstream unavailable")).not.toBe(fp("HTTP 429: upstream unavailable"));
    expect(fp('{"error":"not_found"}')).not.toBe(fp('{"error":"rate_limited"}'));
  });

  it("1 MB of adversarial text is normalized to a bounded string", () => {
    for (const unit of [
      "a",
      "/",
      "1.",
      "a@",
      '"',
      "a=",
      "0:",
      "-----BEGIN ",
      `${"x".repeat(15)}1`,
      " ",
    ]) {
      const text = unit.repeat(Math.ceil((1 << 20) / unit.length));
      expect(normalizeText(text).length).toBeLessThanOrEqual(500);
    }
  });

  it.each(
    [...NORMALIZE_PATTERNS, ...ORIGINAL_TEXT_PATTERNS].map(
      (p) => [p.source.slice(0, 60), p] as const,
    ),
  )("no nested unbounded quantifier in %s", (_name, pattern) => {
    expect(hasNestedUnboundedQuantifier(pattern.source)).toBe(false);
  });
});
