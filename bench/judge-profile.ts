/**
 * Profile of judging one failure, function by function, over test/corpus/tool-errors.jsonl:
 * `matchBuiltinRules`, `normalizeText`, `fingerprint`, `redact` and `assessFailure` in µs per
 * failure (median of rounds), for recurring texts and for texts never seen before (a request id
 * appended), and failures judged per second by the loop of `benchDecisions`.
 *
 *   node --conditions=source --import tsx bench/judge-profile.ts [--bench]
 *   node --conditions=source --import tsx bench/judge-profile.ts --dump /tmp/judge.json
 *
 * `--dump FILE` writes, for every corpus text and for a few thousand generated texts (fixed seed),
 * what the rules, the normalizer, the redactor and the fingerprint make of it, so two versions of
 * them can be diffed for a change of behavior. `JUDGE_SRC=/dir` profiles or dumps another copy of
 * packages/core/src instead (`git archive HEAD packages/core/src | tar -x -C /tmp/head`, with
 * node_modules linked beside it). `--bench` also runs `benchDecisions` of bench/core.ts, which
 * always judges with packages/core/src.
 */
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import fc from "fast-check";
import { median } from "./stats.ts";

function readJsonl<T>(name: string): T[] {
  return readFileSync(new URL(`../test/corpus/${name}`, import.meta.url), "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as T);
}

const toolErrors = readJsonl<{ tool: string; text: string }>("tool-errors.jsonl");
const protocolErrors = readJsonl<{ message: string }>("protocol-errors.jsonl");

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

const corpusTexts = [...toolErrors.map((e) => e.text), ...protocolErrors.map((e) => e.message)];
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

/** `JUDGE_SEED` and `JUDGE_SCALE` (a multiple of the counts) vary the generated texts. */
const SEED = Number(process.env.JUDGE_SEED ?? 20240601);
const SCALE = Number(process.env.JUDGE_SCALE ?? 1);

function generated(): string[] {
  const long = fc
    .tuple(fc.array(text, { minLength: 20, maxLength: 60 }))
    .map(([ts]) => ts.join(" "));
  return [
    ...fc.sample(text, { seed: SEED, numRuns: 4000 * SCALE }),
    ...fc.sample(spliced, { seed: SEED + 1, numRuns: 1500 * SCALE }),
    ...fc.sample(randomChars, { seed: SEED + 2, numRuns: 1000 * SCALE }),
    ...fc.sample(long, { seed: SEED + 3, numRuns: 60 * SCALE }),
    // Past every input cap, with the rule-relevant part beyond it.
    `${"x ".repeat(2100)}rate limit exceeded`,
    `${"a".repeat(4095)} timeout`,
    `${"lorem ipsum ".repeat(400)}api_key=sk-${"A1b2".repeat(10)}`,
  ];
}

type Core = typeof import("../packages/core/src/index.ts") &
  typeof import("../packages/core/src/judge/index.ts");

/**
 * The core under test: packages/core/src, or with `JUDGE_SRC=/some/dir` another copy of it (say,
 * `git archive HEAD packages/core/src` unpacked), for a before/after comparison.
 */
async function loadCore(): Promise<{ src: string; core: Core }> {
  const src = process.env.JUDGE_SRC ?? new URL("../packages/core/src", import.meta.url).pathname;
  const root = await import(`${src}/index.ts`);
  const judge = await import(`${src}/judge/index.ts`);
  return { src, core: { ...root, ...judge } as Core };
}

async function dump(file: string): Promise<void> {
  const { src, core } = await loadCore();
  const { fingerprint, matchBuiltinRules, normalizeText, redact } = core;
  const inputs = [...corpusTexts, ...generated()];
  const row = (t: string) => [
    t,
    matchBuiltinRules(t)?.reason ?? null,
    normalizeText(t),
    redact(t),
    redact(t, { emails: true }),
    redact(t, { maxLength: 10_000, emails: true }),
    fingerprint({ tool: "t", channel: "tool", code: -32602, text: t }),
  ];
  // In batches, each read three times: at first sight, when the judge's memos keep it, and from
  // them. The three must agree: a memo never changes a result.
  const rows: unknown[][] = [];
  for (let at = 0; at < inputs.length; at += 200) {
    const batch = inputs.slice(at, at + 200);
    const first = batch.map(row);
    for (let pass = 0; pass < 2; pass++) {
      const again = JSON.stringify(batch.map(row));
      if (again !== JSON.stringify(first)) {
        throw new Error(`judge-profile: inputs ${at}.. read differently on pass ${pass + 2}`);
      }
    }
    rows.push(...first);
  }
  writeFileSync(file, `${JSON.stringify(rows, null, 1)}\n`);
  process.stderr.write(`judge-profile: wrote ${rows.length} inputs from ${src} to ${file}\n`);
}

// ---------------------------------------------------------------------------------------------
// Profile

/**
 * µs per call of `fn` over the corpus, median of rounds. `recurring`: the same texts every round
 * (after the first, the judge's memos answer). `unseen`: every round a new request id (a UUID)
 * is appended to each text, so no text was judged before.
 */
function perCall(
  label: string,
  rounds: number,
  fn: (text: string, i: number) => unknown,
): { recurring: number; unseen: number } {
  const texts = toolErrors.map((e) => e.text);
  const n = texts.length;
  let sink = 0;
  const measure = (round: (r: number) => readonly string[]) => {
    for (let r = 0; r < 5; r++) {
      const ts = round(r);
      for (let i = 0; i < n; i++) sink += fn(ts[i] as string, i) === undefined ? 0 : 1; // warm-up
    }
    const samples: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const ts = round(r);
      const t = performance.now();
      for (let i = 0; i < n; i++) sink += fn(ts[i] as string, i) === undefined ? 0 : 1;
      samples.push(((performance.now() - t) * 1000) / n);
    }
    return median(samples);
  };
  const recurring = measure(() => texts);
  const unseen = measure(() => texts.map((t) => `${t} (request ${randomUUID()})`));
  if (sink < 0) throw new Error("unreachable");
  process.stdout.write(
    `${label.padEnd(20)} ${recurring.toFixed(2).padStart(8)} µs recurring ${unseen.toFixed(2).padStart(8)} µs unseen\n`,
  );
  return { recurring, unseen };
}

async function profile(rounds: number): Promise<void> {
  const { src, core } = await loadCore();
  const {
    assessFailure,
    failureFromResult,
    fingerprint,
    loadPolicy,
    matchBuiltinRules,
    normalizeText,
    redact,
    resolveToolPolicy,
  } = core;
  process.stdout.write(`core: ${src}\n`);
  const policy = loadPolicy({});
  const { maxLength, emails, patterns } = policy.redaction;
  const tools = toolErrors.map((e) => resolveToolPolicy(policy, e.tool));
  perCall("matchBuiltinRules", rounds, (text) => matchBuiltinRules(text));
  perCall("normalizeText", rounds, (text) => normalizeText(text));
  perCall("fingerprint", rounds, (text) => fingerprint({ tool: "t", channel: "tool", text }));
  perCall("redact", rounds, (text) => redact(text, { maxLength, emails, patterns }));
  const judge = (text: string, i: number) =>
    assessFailure(failureFromResult({ content: [{ type: "text", text }], isError: true }), {
      policy,
      tool: tools[i] as (typeof tools)[number],
      effect: "read_only",
    });
  const us = perCall("assessFailure", rounds, judge);
  process.stdout.write(
    `assessFailure        ${Math.round(1e6 / us.recurring)} failures/s recurring, ${Math.round(1e6 / us.unseen)} unseen\n`,
  );
  // The loop of benchDecisions (bench/core.ts), on this core.
  const failures = toolErrors.map((e, i) => ({
    tool: tools[i] as (typeof tools)[number],
    failure: failureFromResult({ content: [{ type: "text", text: e.text }], isError: true }),
  }));
  const perSecond: number[] = [];
  let sink = 0;
  for (let r = 0; r < 20; r++) {
    const t = performance.now();
    for (const { tool, failure } of failures) {
      sink += assessFailure(failure, { policy, tool, effect: "read_only" }).fingerprint.length;
    }
    perSecond.push(failures.length / ((performance.now() - t) / 1000));
  }
  if (sink < 0) throw new Error("unreachable");
  process.stdout.write(`decisions loop       ${Math.round(median(perSecond))} failures/s\n`);
}

async function main(): Promise<void> {
  const at = process.argv.indexOf("--dump");
  if (at >= 0) {
    await dump(process.argv[at + 1] ?? "/tmp/judge.json");
    return;
  }
  await profile(Number(process.env.ROUNDS ?? 40));
  if (process.argv.includes("--bench")) {
    const { benchDecisions } = await import("./core.ts");
    for (let i = 0; i < 3; i++) {
      process.stdout.write(`benchDecisions       ${JSON.stringify(benchDecisions(20))}\n`);
    }
  }
}

await main();
