/**
 * Failure texts for the judge's benches and differential checks: the corpus of test/corpus/ and
 * texts generated from its words and from the shapes the redactor and the normalizer read (fixed
 * seed). Used by bench/judge-profile.ts (`--dump`) and bench/judge-diff.ts.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";

function readJsonl<T>(name: string): T[] {
  return readFileSync(new URL(`../test/corpus/${name}`, import.meta.url), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as T);
}

export const toolErrors = readJsonl<{ tool: string; text: string }>("tool-errors.jsonl");
export const protocolErrors = readJsonl<{ message: string }>("protocol-errors.jsonl");

// ---------------------------------------------------------------------------------------------
// Generated texts

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const HEX = "0123456789abcdef";
const ALNUM = UPPER + LOWER + DIGITS;

const chars = (alphabet: string, minLength: number, maxLength: number) =>
  fc.string({ unit: fc.constantFrom(...alphabet), minLength, maxLength });
const word = chars(LOWER, 2, 9);
const num = fc.integer({ min: 0, max: 99999 }).map(String);

/** Every corpus text: tool errors, then protocol errors. */
export const corpusTexts = [
  ...toolErrors.map((e) => e.text),
  ...protocolErrors.map((e) => e.message),
];
const corpusWords = [...new Set(corpusTexts.flatMap((t) => t.split(/\s+/)).filter(Boolean))];

const identifier = fc.oneof(
  fc.array(word, { minLength: 2, maxLength: 4 }).map((ws) => ws.join("_")),
  fc.array(word, { minLength: 2, maxLength: 4 }).map((ws) => ws.join("_").toUpperCase()),
  fc
    .array(word, { minLength: 2, maxLength: 4 })
    .map((ws) => ws.map((w, i) => (i === 0 ? w : w[0]?.toUpperCase() + w.slice(1))).join("")),
  fc
    .array(fc.oneof(word, fc.constantFrom("HTTP", "API", "XML", "ID", "URL", "AWS")), {
      minLength: 2,
      maxLength: 4,
    })
    .map((ws) => ws.map((w) => w[0]?.toUpperCase() + w.slice(1)).join("")),
  fc.constantFrom(
    "channel_not_found",
    "AccessDeniedException",
    "readOnly",
    "ThrottlingException",
    "RESOURCE_EXHAUSTED",
    "invalid_auth",
    "not_authed",
    "rateLimited",
    "ResourceNotFoundException",
    "HTTPError",
    "XMLHttpRequest",
    "too_many_requests",
    "PermissionDenied",
    "UNAUTHENTICATED",
    "DEADLINE_EXCEEDED",
    "already_exists",
    "invalid_type",
    "read_only",
    "isReadOnly",
    "tool_not_found",
  ),
);

const secret = fc.oneof(
  chars(`${ALNUM}_-`, 20, 50).map((s) => `sk-${s}`),
  chars(ALNUM, 36, 40).map((s) => `ghp_${s}`),
  chars(ALNUM, 24, 30).map((s) => `sk_live_${s}`),
  chars(UPPER + DIGITS, 16, 16).map((s) => `AKIA${s}`),
  chars(`${ALNUM}_-`, 10, 30).map((s) => `eyJ${s}.eyJ${s}.${s}`),
  chars(`${ALNUM}+/`, 30, 50),
  chars(`${ALNUM}-`, 10, 30).map((s) => `xoxb-${s}`),
  fc
    .tuple(
      fc.constantFrom(
        "api_key",
        "apiKey",
        "token",
        "password",
        "secret",
        "client_secret",
        "DB_PASSWORD",
        '"access_token"',
        "'pwd'",
        "sessionId",
        "sig",
      ),
      fc.constantFrom("=", ": ", " = ", ":", '": "'),
      fc.oneof(
        chars(`${ALNUM}!#$%^*_+-@.`, 1, 30),
        fc.constantFrom("expired", "invalid: expected 32", '"hunter2"', "'x y'", "[redacted]"),
      ),
    )
    .map(([k, s, v]) => `${k}${s}${v}`),
  fc
    .tuple(
      fc.constantFrom(
        "Bearer ",
        "Authorization: Bearer ",
        "authorization=Basic ",
        "x-api-key: ",
        "Cookie: ",
        "bearer ",
        "Proxy-Authorization: token ",
      ),
      fc.oneof(chars(`${ALNUM}-._~+/`, 1, 40), fc.constantFrom("token", "authentication")),
    )
    .map(([p, s]) => p + s),
  fc
    .tuple(fc.constantFrom("RSA PRIVATE KEY", "PRIVATE KEY"), chars(ALNUM, 20, 60), fc.boolean())
    .map(([k, b, end]) => `-----BEGIN ${k}-----\n${b}${end ? `\n-----END ${k}-----` : ""}`),
);

const host = fc.oneof(
  fc.constantFrom(
    "api.example.com",
    "localhost",
    "db.internal",
    "svc.corp",
    "10.0.0.5",
    "192.168.1.20",
    "[::1]",
    "[fd12:3456::1]",
    "8.8.8.8",
    "hooks.slack.com",
    "discord.com",
    "my-host.local",
    "a.b.home.arpa",
  ),
  fc
    .tuple(word, word, fc.constantFrom("com", "io", "org", "internal", "lan"))
    .map((p) => p.join(".")),
);

const url = fc
  .tuple(
    fc.constantFrom(
      "https",
      "http",
      "wss",
      "postgres",
      "redis",
      "mongodb+srv",
      "file",
      "ftp",
      "s3",
    ),
    fc.oneof(
      fc.constant(""),
      fc.tuple(word, chars(`${ALNUM}-._~!$*/`, 1, 12)).map(([u, p]) => `${u}:${p}@`),
      word.map((u) => `${u}@`),
    ),
    host,
    fc.oneof(
      fc.constant(""),
      num.map((n) => `:${n}`),
    ),
    fc.array(fc.oneof(word, num, fc.constantFrom("a@b.com", "10.1.2.3", "x.internal", "api")), {
      maxLength: 4,
    }),
    fc.oneof(
      fc.constant(""),
      fc.tuple(word, chars(ALNUM, 1, 20)).map(([k, v]) => `?${k}=${v}`),
      word.map((w) => `#${w}`),
    ),
    fc.constantFrom("", ".", ":", "!", ")", ",", "?"),
  )
  .map(
    ([scheme, cred, h, port, path, q, trail]) =>
      `${scheme}://${cred}${h}${port}${path.length ? "/" : ""}${path.join("/")}${q}${trail}`,
  );

const path = fc.oneof(
  fc
    .tuple(
      fc.constantFrom("/", "~/", "./", "../", "/home/", "/Users/", "/var/lib/", "/etc/"),
      fc.array(fc.oneof(word, identifier), { minLength: 0, maxLength: 4 }),
      fc.constantFrom("", ".js", ".env", ".py", ".", "/", ":10:5", ":42"),
    )
    .map(([r, ps, e]) => `${r}${ps.join("/")}${e}`),
  fc
    .tuple(
      fc.constantFrom("C:\\", "D:/", "\\\\server\\", "c:\\Users\\"),
      fc.array(word, { minLength: 1, maxLength: 3 }),
    )
    .map(([r, ps]) => `${r}${ps.join("\\")}`),
);

const email = fc
  .tuple(chars(`${LOWER}${DIGITS}._+-`, 1, 10), word, fc.constantFrom("com", "io", "org", "x"))
  .map(([l, h, t]) => `${l}@${h}.${t}`);

const ip = fc.oneof(
  fc
    .array(fc.integer({ min: 0, max: 300 }), { minLength: 4, maxLength: 4 })
    .map((p) => p.join(".")),
  fc.constantFrom("10.0.0.1", "172.16.4.4", "192.168.0.1:8080", "127.0.0.1", "169.254.1.1"),
  fc.constantFrom("fe80::1", "::1", "fd00:1:2::3", "2001:db8::1", "::", "a:b:c", "12:30:45"),
);

const idLike = fc.oneof(
  fc.uuid(),
  chars(HEX, 7, 40),
  chars(HEX, 4, 16).map((h) => `0x${h}`),
  chars(LOWER + DIGITS, 16, 40),
  num,
  fc.double({ min: 0, max: 1e7, noNaN: true }).map((d) => d.toFixed(2)),
  fc.integer({ min: 0, max: 9_999_999 }).map((n) => n.toLocaleString("en-US")),
  fc
    .tuple(num, fc.constantFrom("ms", "s", " seconds", "m", "h", "d", "µs", "ns", " min", "days"))
    .map(([n, u]) => n + u),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toUTCString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.constantFrom(
    "Jan 5th, 2024",
    "March 3, 2023",
    "5-Jan-2024",
    "10:30 pm",
    "23:59:59.123",
    "1:2",
    "utf8",
    "ipv4",
    "base64",
    "000000d",
    "E11000",
    "v1.2.3",
    "node.js",
  ),
);

const quoted = fc
  .tuple(
    fc.constantFrom(['"', '"'], ["'", "'"], ["`", "`"], ["“", "”"], ["‘", "’"]),
    fc.array(fc.oneof(word, identifier, num), { maxLength: 4 }),
  )
  .map(([[o, c], ws]) => `${o}${ws.join(" ")}${c}`);

const json = fc
  .tuple(
    fc.constantFrom("code", "error", "message", "type", "status", "reason", "detail", "id"),
    fc.oneof(
      quoted,
      word.map((w) => `"${w}"`),
      identifier.map((w) => `"${w}"`),
      num,
    ),
  )
  .map(([k, v]) => `{"${k}": ${v}}`);

const keyValue = fc
  .tuple(
    fc.oneof(
      fc.constantFrom("code", "error", "reason", "status", "kind", "id", "user", "path"),
      word,
    ),
    fc.oneof(word, identifier, num, quoted, path),
  )
  .map(([k, v]) => `${k}=${v}`);

const frame = fc.oneof(
  fc.tuple(identifier, path, num).map(([fn, p, n]) => `\n    at ${fn} (${p}:${n}:5)\n`),
  fc.tuple(word, num).map(([f, n]) => `\n    at async file:///srv/${f}.js:${n}:2`),
  fc.tuple(word, num).map(([f, n]) => ` at ${f}.run (node:internal/${f}:${n}:7) `),
  fc.tuple(word, num).map(([f, n]) => `\n  File "/app/${f}.py", line ${n}, in ${f}\n    ${f}()\n`),
  fc.constantFrom(
    "\nTraceback (most recent call last):\n",
    "\n\t... 12 more\n",
    "\n    at <anonymous>\n",
    "\n    at Array.map (native)\n",
    "\\n    at foo (/a/b.js:1:2)\\n",
    " at com.Foo.bar(Foo.java:42) ",
  ),
);

const status = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(
        "HTTP ",
        "status code ",
        "status: ",
        "error ",
        "[",
        "(",
        "code=",
        "HTTP/1.1 ",
        "",
      ),
      fc.integer({ min: 100, max: 599 }),
      fc.constantFrom("", "]", ")", " Too Many Requests", " Not Found", " Bad Gateway", " Gone"),
    )
    .map(([a, n, b]) => `${a}${n}${b}`),
  fc.integer({ min: -32700, max: -32000 }).map((n) => `MCP error ${n}: `),
);

const noise = fc.oneof(
  fc.constantFrom(
    "\u001b[31m",
    "\u001b[0m",
    "\u0000",
    "\u0007",
    "\u200b",
    "\ufeff",
    "\u00ad",
    "😀",
    "é",
    "…",
    "[redacted]",
    "[token]",
    "<id>",
    "\r\n",
    "\ud800",
    "\udc00x",
  ),
  chars(" \t\n_-/.:@=\"'`()[]{}|\\^,;?#&*+~<>!%$0123456789aAzZ", 1, 8),
);

/** A run of consecutive corpus words, as written or glued into one identifier. */
const corpusRuns = corpusTexts.map((t) => t.split(/\s+/).filter(Boolean));
const capital = (w: string) => (w[0]?.toUpperCase() ?? "") + w.slice(1);
const phrase = fc
  .tuple(
    fc.constantFrom(...corpusRuns.filter((r) => r.length > 0)),
    fc.nat(),
    fc.integer({ min: 1, max: 4 }),
    fc.constantFrom("as-is", "lower", "upper", "snake", "SNAKE", "camel", "Pascal", "kebab"),
  )
  .map(([run, at, n, style]) => {
    const start = at % run.length;
    const ws = run.slice(start, start + n);
    const lower = ws.map((w) => w.toLowerCase());
    switch (style) {
      case "lower":
        return lower.join(" ");
      case "upper":
        return ws.join(" ").toUpperCase();
      case "snake":
        return lower.join("_");
      case "SNAKE":
        return lower.join("_").toUpperCase();
      case "camel":
        return lower.map((w, i) => (i === 0 ? w : capital(w))).join("");
      case "Pascal":
        return lower.map(capital).join("");
      case "kebab":
        return lower.join("-");
      default:
        return ws.join(" ");
    }
  });

const piece = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...corpusWords) },
  { weight: 6, arbitrary: phrase },
  { weight: 3, arbitrary: word },
  { weight: 3, arbitrary: identifier },
  { weight: 2, arbitrary: secret },
  { weight: 2, arbitrary: url },
  { weight: 2, arbitrary: path },
  { weight: 1, arbitrary: email },
  { weight: 1, arbitrary: ip },
  { weight: 3, arbitrary: idLike },
  { weight: 2, arbitrary: quoted },
  { weight: 1, arbitrary: json },
  { weight: 2, arbitrary: keyValue },
  { weight: 1, arbitrary: frame },
  { weight: 2, arbitrary: status },
  { weight: 1, arbitrary: noise },
);

const separator = fc.constantFrom(
  " ",
  " ",
  " ",
  " ",
  "\n",
  ", ",
  ". ",
  ": ",
  "\t",
  "",
  "(",
  ")",
  "=",
  "/",
  "_",
  "-",
  "@",
  ":",
  " - ",
  "; ",
);

const text = fc
  .array(fc.tuple(piece, separator), { minLength: 1, maxLength: 30 })
  .map((parts) => parts.map(([p, s]) => p + s).join(""));

/** A corpus text cut and spliced with generated text. */
const spliced = fc
  .tuple(fc.constantFrom(...corpusTexts), fc.nat(), fc.nat(), text, fc.boolean())
  .map(([t, a, b, extra, before]) => {
    const i = a % (t.length + 1);
    const j = i + (b % (t.length - i + 1));
    const cut = t.slice(i, j);
    return before ? `${extra} ${cut}` : `${cut} ${extra}`;
  });

const randomChars = chars(
  " \t\n_-/.:@=\"'`()[]{}|\\^,;?#&*+~<>!%$0123456789abcdefxyzABCDEFXYZéü😀",
  0,
  200,
);

/** The seed of the generated texts unless `JUDGE_SEED` says another. */
export const DEFAULT_SEED = 20240601;

/**
 * Generated failure texts, the same for the same seed and scale (a multiple of the counts): texts
 * of pieces (corpus words and phrases, secrets, URLs, paths, ids, quoted values, JSON, stack
 * frames, statuses, noise), corpus texts spliced with them, random characters, long texts, and
 * three texts past every input cap. About 6,560 texts per unit of scale.
 */
export function generatedTexts(seed: number, scale: number): string[] {
  const long = fc
    .tuple(fc.array(text, { minLength: 20, maxLength: 60 }))
    .map(([ts]) => ts.join(" "));
  return [
    ...fc.sample(text, { seed, numRuns: 4000 * scale }),
    ...fc.sample(spliced, { seed: seed + 1, numRuns: 1500 * scale }),
    ...fc.sample(randomChars, { seed: seed + 2, numRuns: 1000 * scale }),
    ...fc.sample(long, { seed: seed + 3, numRuns: 60 * scale }),
    // Past every input cap, with the rule-relevant part beyond it.
    `${"x ".repeat(2100)}rate limit exceeded`,
    `${"a".repeat(4095)} timeout`,
    `${"lorem ipsum ".repeat(400)}api_key=sk-${"A1b2".repeat(10)}`,
  ];
}
