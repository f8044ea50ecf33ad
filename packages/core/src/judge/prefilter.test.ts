/**
 * The shortcuts of the judging hot path change no result: the rule prefilter against running every
 * pattern, the anchored URL search and the location search against the builtin `replace` with the
 * whole pattern.
 */
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ISO_TIMESTAMP_AT, NORMALIZE_PATTERNS, UUID_AT } from "./fingerprint.ts";
import {
  applySecretRule,
  BUILTIN_PATTERNS,
  charTable,
  collapseSpaces,
  hasCredentialKey,
  hasRun,
  LOCATIONS_WITH_EMAILS,
  locationEnd,
  mayHoldFlag,
  mayHoldFrames,
  redactLocation,
  redactLocations,
  replaceAnchored,
  SECRET_GROUPS,
} from "./redact.ts";
import { patternAlternatives } from "./rule-prefilter.ts";
import {
  BUILTIN_RULES,
  matchBuiltinRules,
  mayHoldStatus,
  splitIdentifiers,
  type TextRule,
} from "./rules.ts";

// What the identifier split of the rules used to be: three replaces, and the test that guarded them
// (where a `_`, a lowercase letter or digit before a capital, or two capitals before a lowercase
// letter are). The one-pass splitIdentifiers must answer as they do.
function splitByReplaces(text: string): string {
  return text
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
}
const SPLITTABLE = /_|[a-z0-9][A-Z]|[A-Z][A-Z][a-z]/;

// The gates the redactor used to run as patterns; its hand-written readers must answer as they do.
/** A stack frame may be there (`mayHoldFrames`). */
const FRAME_HINT =
  /(?:\b|(?<=\\[nrt]))at\s|File "|Traceback \(|\.\.\. |goroutine |stack backtrace|panicked at|\.rb:|#|Stack trace:|thrown in |\.exs?:|\.erl:|^(?=[\s\S]*@)[\s\S]*(?::\/\/|\[native code\])/;
/** What ends every key of a key-value credential, then its separator (`hasCredentialKey`). */
const CREDENTIAL_KEY =
  /(?:key|secret|token|password|passwd|pwd|passphrase|credentials?|id|signature|sig)["']?\s*[:=]/i;

const corpus = [
  ...readFileSync(new URL("../../../../test/corpus/tool-errors.jsonl", import.meta.url), "utf8")
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { text: string }).text),
  ...readFileSync(new URL("../../../../test/corpus/protocol-errors.jsonl", import.meta.url), "utf8")
    .trim()
    .split("\n")
    .map((line) => (JSON.parse(line) as { message: string }).message),
];
const corpusWords = [...new Set(corpus.flatMap((t) => t.split(/\s+/)).filter(Boolean))];

/** The rule table as it reads without a prefilter: every pattern, in order, on both copies. */
function matchEveryPattern(text: string): TextRule | undefined {
  const head = text.length > 4000 ? text.slice(0, 4000) : text;
  const split = head
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
  const matches = BUILTIN_RULES.filter(
    (rule) => rule.pattern.test(head) || (split !== head && rule.pattern.test(split)),
  );
  // A generic word (`weak`) yields to any specific phrasing that matches too.
  return matches.find((rule) => rule.weak !== true) ?? matches[0];
}

const capital = (w: string) => (w[0]?.toUpperCase() ?? "") + w.slice(1);

/** Corpus words, alone or glued into identifiers, with numbers and punctuation between. */
const ruleText = fc
  .array(
    fc.tuple(
      fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...corpusWords) },
        {
          weight: 2,
          arbitrary: fc
            .tuple(
              fc.array(fc.constantFrom(...corpusWords), { minLength: 2, maxLength: 3 }),
              fc.constantFrom("_", "camel", "Pascal", "UPPER_"),
            )
            .map(([ws, style]) => {
              const lower = ws.map((w) => w.toLowerCase().replace(/[^a-z0-9]/g, ""));
              if (style === "_") return lower.join("_");
              if (style === "UPPER_") return lower.join("_").toUpperCase();
              if (style === "camel") return lower.map((w, i) => (i ? capital(w) : w)).join("");
              return lower.map(capital).join("");
            }),
        },
        { weight: 1, arbitrary: fc.integer({ min: 100, max: 599 }).map(String) },
        { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
      ),
      fc.constantFrom(" ", " ", ": ", "\n", "_", "", "(", "[", '"', ". "),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.map(([p, s]) => p + s).join(""));

/**
 * Texts around HTTP-like statuses: a lead (`status`, `HTTP/1.1`, `error`, `with`…) in any case,
 * separators (`_` too, which the identifier split makes a space), numbers of 2 to 4 digits, and the
 * hex of request ids.
 */
const statusText = fc
  .array(
    fc.oneof(
      {
        weight: 3,
        arbitrary: fc.constantFrom(
          "status",
          "Status",
          "STATUS_CODE",
          "statusCode",
          "status code",
          "http",
          "HTTPS",
          "http/1",
          "HTTP/1.1",
          "http/2.0",
          "/1.",
          "code",
          "Code",
          "error",
          "ERROR",
          "responded with",
          "Responded With",
          "not found",
          "Too Many Requests",
          "Gateway Timeout",
          "Bad Gateway",
          "unavailable",
          "request",
          "x",
          "Q",
        ),
      },
      { weight: 1, arbitrary: fc.integer({ min: 10, max: 6000 }).map(String) },
      { weight: 2, arbitrary: fc.constantFrom("404", "429", "503", "500", "4000", "5xx") },
      { weight: 1, arbitrary: fc.uuid() },
      {
        weight: 1,
        arbitrary: fc.string({ unit: fc.constantFrom(..."0123456789abcdef-"), maxLength: 12 }),
      },
      {
        weight: 3,
        arbitrary: fc.string({
          unit: fc.constantFrom(..." :=#'\"([_-/.\u00a0\ufeff\u017f"),
          maxLength: 3,
        }),
      },
    ),
    { maxLength: 10 },
  )
  .map((parts) => parts.join(""));

/** Status patterns: those of rules made by statusPattern in rules.ts. */
const STATUS_RULES = BUILTIN_RULES.filter((rule) =>
  rule.pattern.source.startsWith(String.raw`\b(?:status(?:[ _]?code)?|https?`),
);

describe("rule prefilter", () => {
  it("reads every built-in pattern", () => {
    const unread = BUILTIN_RULES.filter((rule) => patternAlternatives(rule.pattern) === undefined);
    expect(unread.map((rule) => rule.pattern.source)).toEqual([]);
  });

  it("finds the rule every pattern run in order finds, on the corpus", () => {
    for (const text of corpus) expect(matchBuiltinRules(text)).toBe(matchEveryPattern(text));
  });

  it("finds the rule every pattern run in order finds, on generated texts", () => {
    fc.assert(
      fc.property(ruleText, (text) => {
        expect(matchBuiltinRules(text)).toBe(matchEveryPattern(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("finds the rule every pattern run in order finds, on texts around statuses", () => {
    fc.assert(
      fc.property(statusText, (text) => {
        expect(matchBuiltinRules(text)).toBe(matchEveryPattern(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("runs status patterns only where one may match: mayHoldStatus never misses one", () => {
    expect(STATUS_RULES.length).toBe(20);
    let matched = 0;
    let ruledOut = 0;
    fc.assert(
      fc.property(statusText, (text) => {
        const split = splitIdentifiers(text);
        const any = STATUS_RULES.some((r) => r.pattern.test(text) || r.pattern.test(split));
        if (any) {
          matched++;
          expect(mayHoldStatus(text), text).toBe(true);
        } else if (/[45]\d\d/.test(text) && !mayHoldStatus(text)) {
          ruledOut++;
        }
      }),
      { numRuns: 10_000 },
    );
    // The property saw matches, and the gate rules out texts the old one (`[45]\d\d`) let through.
    expect(matched).toBeGreaterThan(400);
    expect(ruledOut).toBeGreaterThan(200);
  });

  it.each([
    ["http/1.1404", true],
    ["HTTP/1404", true],
    ["error_404", true],
    ["Status404", true],
    ["CODE:429", true],
    ["responded with 503", true],
    ["(500)", true],
    ["404 Not Found", true],
    ["x-504 Gateway Timeout", true],
    ["a4041", false],
    ["f404-", false],
    ["1503", false],
    ["d7a5e4c2-0b13-4f50-9a21-3c5e8f2d1b44", false],
  ])("mayHoldStatus(%j) is %s, as the status patterns need", (text, expected) => {
    expect(mayHoldStatus(text)).toBe(expected);
    const split = splitIdentifiers(text);
    const any = STATUS_RULES.some((r) => r.pattern.test(text) || r.pattern.test(split));
    expect(any).toBe(expected);
  });

  it("splits identifiers in one pass as the three replaces did, the text itself where they change nothing", () => {
    const anyText = fc.oneof(
      ruleText,
      statusText,
      fc.string({ unit: fc.constantFrom(..."aZ0_ -bYzAB9"), maxLength: 16 }),
      fc.string({ unit: fc.constantFrom(..."aAzZ09_@[`{ éÉ"), maxLength: 24 }),
    );
    let split = 0;
    fc.assert(
      fc.property(anyText, (text) => {
        const got = splitIdentifiers(text);
        expect(got, text).toBe(splitByReplaces(text));
        const changes = got !== text;
        if (changes) split++;
        expect(SPLITTABLE.test(text), text).toBe(changes);
      }),
      { numRuns: 8000 },
    );
    expect(split).toBeGreaterThan(1000);
  });

  it.each([
    ["channel_not_found", "channel not found"],
    ["AccessDeniedException", "Access Denied Exception"],
    ["readOnly", "read Only"],
    ["HTTPError", "HTTP Error"],
    ["XMLHttpRequest", "XML Http Request"],
    ["s3Bucket_IDs", "s3 Bucket I Ds"],
    ["_A", " A"],
    ["ABCdEFg", "AB Cd E Fg"],
    ["aBCd", "a B Cd"],
    ["plain text", "plain text"],
  ])("splitIdentifiers(%j) is %j", (text, expected) => {
    expect(splitIdentifiers(text)).toBe(expected);
    expect(splitByReplaces(text)).toBe(expected);
  });

  it("splits patterns into alternatives that match where the pattern does", () => {
    fc.assert(
      fc.property(ruleText, (text) => {
        for (const rule of BUILTIN_RULES) {
          const alternatives = patternAlternatives(rule.pattern) ?? [];
          expect(alternatives.some((a) => a.pattern.test(text))).toBe(rule.pattern.test(text));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("names words every match holds", () => {
    // Texts built from each alternative's own source (without word boundaries and lookarounds,
    // which fast-check cannot generate), kept when the alternative matches them.
    const strip = (source: string) =>
      source
        .replace(/\\b/g, "")
        .replace(/\(\?<?[=!](?:[^()]|\([^()]*\))*\)/g, "")
        .replace(/^\^|(?<!\\)\$$/g, "");
    let checked = 0;
    for (const rule of BUILTIN_RULES) {
      for (const { pattern, conditions } of patternAlternatives(rule.pattern) ?? []) {
        const samples = fc.sample(fc.stringMatching(new RegExp(strip(pattern.source))), {
          numRuns: 30,
          seed: 7,
        });
        for (const sample of samples) {
          for (const text of [sample, sample.toUpperCase(), ` ${sample} `]) {
            if (!pattern.test(text)) continue;
            checked++;
            const lower = text.toLowerCase();
            for (const words of conditions) {
              expect(
                words.some((w) => lower.includes(w)),
                `${pattern.source} on ${text}`,
              ).toBe(true);
            }
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(1000);
  });
});

// ---------------------------------------------------------------------------------------------
// URLs and locations

const scheme = fc.oneof(
  fc.constantFrom("http", "https", "postgres", "mongodb+srv", "s3", "file", "x"),
  fc.string({ unit: fc.constantFrom(..."abcXYZ019+.-"), minLength: 0, maxLength: 40 }),
);
const locationPiece = fc.oneof(
  fc
    .tuple(
      scheme,
      fc.constantFrom("://", ":/", "//", "://user:pw@"),
      fc.constantFrom("a.b", "10.0.0.1", "x.internal", "h/p?q=1#f", ""),
    )
    .map(([s, sep, rest]) => s + sep + rest),
  fc.constantFrom(
    "/etc/x",
    "~/a/b",
    "C:\\Users\\x",
    "D:/d/e",
    "\\\\srv\\share\\f",
    "192.168.1.2",
    "172.16.0.9:80",
    "fd12:3456::1",
    "::1",
    "fe80:1::2",
    "db.corp",
    "a.home.arpa",
    "u@example.com",
    "x@y",
  ),
  fc.string({ unit: fc.constantFrom(..."ab:/\\.@19 -_"), maxLength: 12 }),
);
const locationText = fc
  .array(fc.tuple(locationPiece, fc.constantFrom(" ", "", "(", ")", ", ", ".", "\n", "=")), {
    maxLength: 10,
  })
  .map((parts) => parts.map(([p, s]) => p + s).join(""));

const URL_PATTERNS = [
  NORMALIZE_PATTERNS.find((p) => p.source.startsWith("(?<![a-z0-9+.-])[a-z][a-z0-9+.-]{0,30}")),
  BUILTIN_PATTERNS.find((p) =>
    p.source.startsWith("(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}"),
  ),
];

describe("anchored URL search", () => {
  it.each(URL_PATTERNS.map((p, i) => [i, p] as const))(
    "replaces as the builtin does (%i)",
    (_i, pattern) => {
      expect(pattern).toBeDefined();
      const re = pattern as RegExp;
      const replacer = (...args: unknown[]) =>
        `<${args.length}:${String(args[0])}:${String(args[1])}>`;
      fc.assert(
        fc.property(locationText, fc.boolean(), (text, lower) => {
          const t = lower ? text.toLowerCase() : text;
          expect(replaceAnchored(t, re, "://", 31, replacer)).toBe(t.replace(re, replacer));
        }),
        { numRuns: 2000 },
      );
    },
  );
});

describe("location search", () => {
  /**
   * The single global pattern of every kind, as the redactor ran it before, each match run on
   * where a path's folder names hold spaces (locationEnd).
   */
  function withOnePattern(text: string, emails: boolean): string {
    const pattern = new RegExp(LOCATIONS_WITH_EMAILS.source, LOCATIONS_WITH_EMAILS.flags);
    let out = "";
    let last = 0;
    for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
      const kind = m.slice(1).findIndex((g) => g !== undefined);
      const end = locationEnd(text, kind, m.index, m.index + m[0].length);
      out += text.slice(last, m.index) + redactLocation(text.slice(m.index, end), kind, emails);
      last = end;
      pattern.lastIndex = end;
    }
    return out + text.slice(last);
  }

  it("replaces what one pattern of every kind replaces", () => {
    fc.assert(
      fc.property(locationText, fc.boolean(), (text, emails) => {
        // Without emails, the reference must not see any: the email kind is off.
        const t = emails ? text : text.replaceAll("@", " ");
        expect(redactLocations(t, emails)).toBe(withOnePattern(t, emails));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("secret rule tests", () => {
  const secretPiece = fc.oneof(
    fc.constantFrom(
      "sk-",
      "sk_live_",
      "rk_test_",
      "whsec_",
      "ghp_",
      "github_pat_",
      "xoxb-",
      "xapp-",
      "AKIA",
      "AIza",
      "npm_",
      "hf-",
      "glpat-",
      "pypi-",
      "eyJ",
      "Bearer ",
      "bearer",
      "Authorization: ",
      "X-Api-Key=",
      "x-auth-token:",
      "Cookie: ",
      "set-cookie:",
      "password=",
      "api_key: ",
      "'secret':",
      '"token": "',
      "sessionId=",
      "sig=",
      "https://",
      "postgres://u:p@h/db",
      "hooks.slack.com/",
      "discord.com/api/webhooks/",
      // Named values, command lines and other vendors (issue 8.9).
      "DB_PASS=",
      "AccountKey=",
      "STRIPE_WEBHOOK=",
      "token_count:",
      "--password ",
      "--api-key ",
      "-u ",
      "--user=",
      "mysql ",
      "-p",
      "0x",
      "0xabcdef0123456789abcdef0123456789",
      "SG.",
      "gsk_",
      "hvs.",
      "dapi",
      "tskey-",
      "ghs_12_",
      "A3T",
      // Whole keys of each vendor format.
      "sk-abcdefghijklmnop1234",
      "sk_live_abcdefgh12",
      "whsec_abcdefghijklmnop12",
      "ghp_abcdefghijklmnopqrst12",
      "github_pat_abcdefghijklmnopqrst_12",
      "xoxb-12345678-abc",
      "AKIAABCDEFGHIJKLMNOP",
      "AIzaabcdefghijklmnopqrstuvwxyz123456",
      "npm_abcdefghijklmnopqrst12",
      "eyJhbGciOi.eyJzdWIiOi.c2ln",
      "aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gI3",
    ),
    fc.string({ unit: fc.constantFrom(..."aZ09+/_-=.:"), minLength: 4, maxLength: 40 }),
    locationPiece,
  );
  const secretText = fc
    .array(fc.tuple(secretPiece, fc.constantFrom(" ", "", "\n", '"', "'", "=", ": ")), {
      maxLength: 10,
    })
    .map((parts) => parts.map(([p, s]) => p + s).join(""));

  it("a failed test means the rule would change nothing", () => {
    fc.assert(
      fc.property(secretText, (text) => {
        for (const group of SECRET_GROUPS) {
          for (const rule of group.rules) {
            const [pattern, , may] = rule;
            if (group.may(text) && may(text)) continue;
            expect(applySecretRule(rule, text), pattern.source).toBe(text);
          }
        }
      }),
      { numRuns: 3000 },
    );
  });
});

describe("the tests of the rules of long keys and AWS secret keys", () => {
  // Runs near the lengths those rules read (32 or more, exactly 40), of mixed or single case, hex
  // or base64, with `=`, `_`, `.`, `-`, `/` and `+` at their edges.
  const run = fc
    .tuple(
      fc.constantFrom(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        "abcdef0123456789",
        "ABCDEF0123456789",
        "abcdefghijklmnopqrstuvwxyz0123456789_-",
        "aB3/+",
        "ab",
      ),
      fc.integer({ min: 28, max: 44 }),
      fc.nat(),
    )
    .map(([alphabet, length, seed]) => {
      let out = "";
      let x = seed;
      for (let i = 0; i < length; i++) {
        x = (Math.imul(x, 1103515245) + 12345) >>> 0;
        out += alphabet.charAt(x % alphabet.length);
      }
      return out;
    });
  const keyText = fc
    .array(
      fc.tuple(run, fc.constantFrom(" ", "=", "==", "===", "_", ".", "-", "/", "+", ":", "")),
      {
        maxLength: 4,
      },
    )
    .map((parts) => parts.map(([r, s]) => r + s).join(""));

  it("a failed test means the rule would change nothing; a passed one that it may", () => {
    const rules = SECRET_GROUPS.flatMap((group) => group.rules).filter(([pattern]) =>
      /\{32,\}|\{40\}/.test(pattern.source),
    );
    expect(rules).toHaveLength(3);
    let changed = 0;
    fc.assert(
      fc.property(keyText, (text) => {
        for (const rule of rules) {
          const [pattern, , may] = rule;
          const after = applySecretRule(rule, text);
          if (after !== text) changed++;
          if (!may(text)) expect(after, pattern.source).toBe(text);
        }
      }),
      { numRuns: 3000 },
    );
    // The texts reach the rules: many of them change.
    expect(changed).toBeGreaterThan(300);
  });
});

describe("replaceAnchored with a sticky pattern", () => {
  it("replaces what the builtin replace with the global pattern replaces", () => {
    const piece = fc.oneof(
      fc.uuid(),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString().toLowerCase()),
      fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
      fc.string({ unit: fc.constantFrom(..."0123456789abcdefz-: t.+"), maxLength: 14 }),
    );
    const text = fc
      .array(fc.tuple(piece, fc.constantFrom("", " ", "-", "0", "a", "1-")), { maxLength: 6 })
      .map((parts) => parts.map(([p, s]) => p + s).join(""));
    let replaced = 0;
    fc.assert(
      fc.property(text, (t) => {
        for (const [sticky, offset] of [
          [UUID_AT, 8],
          [ISO_TIMESTAMP_AT, 4],
        ] as const) {
          const expected = t.replace(new RegExp(sticky.source, "g"), "<x>");
          if (expected !== t) replaced++;
          expect(replaceAnchored(t, sticky, "-", offset, () => "<x>")).toBe(expected);
        }
      }),
      { numRuns: 3000 },
    );
    expect(replaced).toBeGreaterThan(300);
  });
});

describe("the hand-written tests of the redactor", () => {
  const piece = fc.oneof(
    fc.constantFrom(
      "at",
      "AT",
      "at ",
      " at\t",
      "_at ",
      "9at\n",
      "at\u00a0",
      "at\u2028",
      'File "',
      "Traceback (",
      "... ",
      "goroutine ",
      "stack backtrace",
      "panicked at",
      ".rb:",
      ".rb",
      "#",
      "Stack trace:",
      "thrown in ",
      "@",
      "://",
      "[native code]",
      "key",
      "KEY",
      "Key",
      "api_key",
      "secret",
      "token",
      "PassWord",
      "passwd",
      "pwd",
      "passphrase",
      "credential",
      "credentials",
      "id",
      "ID",
      "signature",
      "sig",
      "\u212aey",
      "ſecret",
      "ke",
      "ey",
    ),
    fc.string({ unit: fc.constantFrom(..."\"' \t\n\u00a0\u3000:=ka."), maxLength: 4 }),
  );
  const text = fc.array(piece, { maxLength: 8 }).map((parts) => parts.join(""));

  it("read what their patterns read", () => {
    let frames = 0;
    let keys = 0;
    fc.assert(
      fc.property(text, (t) => {
        const frame = FRAME_HINT.test(t);
        const key = CREDENTIAL_KEY.test(t);
        if (frame) frames++;
        if (key) keys++;
        expect(mayHoldFrames(t), t).toBe(frame);
        expect(hasCredentialKey(t), t).toBe(key);
      }),
      { numRuns: 5000 },
    );
    expect(frames).toBeGreaterThan(300);
    expect(keys).toBeGreaterThan(300);
  });

  it("mayHoldFlag: the flag rule changes nothing where it finds no flag, and is needed", () => {
    const rule = SECRET_GROUPS.flatMap((g) => g.rules).find((r) =>
      r[0].source.startsWith("(?<![\\w-])(--?[A-Za-z]"),
    );
    expect(rule).toBeDefined();
    const flagRule = rule as (typeof SECRET_GROUPS)[number]["rules"][number];
    expect(flagRule[2]).toBe(mayHoldFlag);
    const flagText = fc
      .array(
        fc.oneof(
          fc.constantFrom(
            "-",
            "--",
            "-p",
            "-P",
            "--password",
            "-u",
            "--1",
            "-_x",
            "a-b",
            "_-x",
            "9-x",
            "x--y",
            "é-x",
            "-\u212a",
            "(-",
            "=-",
            "\n-",
            "mysql",
            "hunter2",
            "'x y'",
            '"q"',
            "<x>",
          ),
          fc.string({ unit: fc.constantFrom(..."-aZ9_ \t\n'\"=<"), maxLength: 5 }),
        ),
        { maxLength: 8 },
      )
      .map((parts) => parts.join(""));
    let flags = 0;
    let none = 0;
    fc.assert(
      fc.property(flagText, (t) => {
        flagRule[0].lastIndex = 0;
        if (flagRule[0].test(t)) {
          flags++;
          expect(mayHoldFlag(t), t).toBe(true);
        }
        flagRule[0].lastIndex = 0;
        if (!mayHoldFlag(t)) {
          none++;
          expect(applySecretRule(flagRule, t), t).toBe(t);
        }
      }),
      { numRuns: 5000 },
    );
    expect(flags).toBeGreaterThan(150);
    expect(none).toBeGreaterThan(150);
    // Where no flag starts, as ids and words hold a `-`: the gate says so (it is why it is there).
    for (const t of ["a-b", "x--y", "9-x", "_-x", "-\u212a", "-", "--", "- x", "req 1b4e-42aa"]) {
      expect(mayHoldFlag(t), t).toBe(false);
    }
    for (const t of ["--password x", "(-p x", "-u a:b", "=--x", "é-x y"]) {
      expect(mayHoldFlag(t), t).toBe(true);
    }
  });
});

describe("hasRun", () => {
  it("finds what reading every maximal run finds", () => {
    const set = charTable("ab1");
    const withDigit = (text: string, start: number, end: number) =>
      text.slice(start, end).includes("1");
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("a", "b", "1", " ", "x", "é"), maxLength: 80 }),
        fc.integer({ min: 1, max: 9 }),
        (text, length) => {
          const runs = [...text.matchAll(/[ab1]+/g)].map((m) => m[0]);
          expect(hasRun(text, set, length)).toBe(runs.some((r) => r.length >= length));
          expect(hasRun(text, set, length, withDigit)).toBe(
            runs.some((r) => r.length >= length && r.includes("1")),
          );
        },
      ),
      { numRuns: 3000 },
    );
  });
});

describe("collapseSpaces", () => {
  it("collapses as replacing every run of whitespace with one space does", () => {
    // Every character \s matches, and look-alikes it does not (zero-width space, NEL, U+180E).
    const unit = fc.constantFrom(
      ..." \t\n\v\f\r\u00a0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f\u3000\ufeff",
      ..."\u200b\u0085\u180ea-",
    );
    let changed = 0;
    fc.assert(
      fc.property(fc.string({ unit, maxLength: 16 }), (t) => {
        const expected = t.replace(/\s+/g, " ");
        if (expected !== t) changed++;
        expect(collapseSpaces(t)).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    expect(changed).toBeGreaterThan(2000);
    expect(collapseSpaces("a b c")).toBe("a b c");
    expect(collapseSpaces(" a  b\n\tc ")).toBe(" a b c ");
  });
});
