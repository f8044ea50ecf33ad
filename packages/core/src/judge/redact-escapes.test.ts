/**
 * Secrets and paths written with escapes (redact/escapes.ts): JSON string escapes, `\uXXXX`,
 * `\xNN` and percent-encoding hide them from every pattern unless the text is also read decoded.
 * What is replaced is the span as written, so the rest of the text keeps its form.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redact } from "./redact.ts";

describe("redact: secrets and paths behind escapes", () => {
  const cases: [string, string, string][] = [
    // [escaped text, what must not survive, the redacted text]
    [
      String.raw`{\"password\":\"hunter2xyz\"}`,
      "hunter2",
      String.raw`{\"password\":\"[redacted]\"}`,
    ],
    [
      String.raw`failed: {\"path\":\"\/home\/alice\/.ssh\/id_rsa\"}`,
      "alice",
      String.raw`failed: {\"path\":\"[path]\"}`,
    ],
    [String.raw`open \/etc\/shadow failed`, "shadow", "open [path] failed"],
    [String.raw`\u0070assword=hunter2xyz`, "hunter2", String.raw`\u0070assword=[redacted]`],
    [String.raw`path \u002fhome\u002falice\u002fsecret.txt`, "alice", "path [path]"],
    [String.raw`password\u003dhunter2xyz`, "hunter2", String.raw`password\u003d[redacted]`],
    [String.raw`password\x3dhunter2xyz`, "hunter2", String.raw`password\x3d[redacted]`],
    [String.raw`path \x2fhome\x2falice\x2fkeys`, "alice", "path [path]"],
    [
      "GET /api?q=password%3Dhunter2xyz failed",
      "hunter2",
      "GET /api?q=password%3D[redacted] failed",
    ],
    ["file %2Fhome%2Falice%2F.aws%2Fcredentials not found", "alice", "file [path] not found"],
    // Two layers: a value percent-encoded twice, JSON inside JSON.
    ["file %252Fhome%252Falice%252Fid_rsa", "alice", "file [path]"],
    [
      String.raw`{\\\"password\\\":\\\"hunter2xyz\\\"}`,
      "hunter2",
      String.raw`{\\\"password\\\":\\\"[redacted]\\\"}`,
    ],
    // Quotes alone: the rules that read quotes run again.
    [
      String.raw`{\"headers\":{\"Authorization\":\"Bearer abc123def456ghi789\"}}`,
      "abc123",
      String.raw`{\"headers\":{\"Authorization\":\"Bearer [token]\"}}`,
    ],
    [
      String.raw`said \"the password is hunter2xyz\"`,
      "hunter2",
      String.raw`said \"the password is [redacted]\"`,
    ],
    // An escaped invisible mark splitting the name, as a raw one would.
    [
      String.raw`pass\u200bword\u003dhunter2xyz`,
      "hunter2",
      String.raw`pass\u200bword\u003d[redacted]`,
    ],
  ];

  it.each(cases)("redacts %s", (text, secret, expected) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toBe(expected);
  });

  it("keeps what no rule reads, and the placeholders already there", () => {
    expect(redact("disk at 95% full, 100%25 sure")).toBe("disk at 95% full, 100%25 sure");
    expect(redact(String.raw`bad \"name\": expected a string`)).toBe(
      String.raw`bad \"name\": expected a string`,
    );
    expect(redact(String.raw`[path] and \u002fetc\u002fpasswd, then [redacted]`)).toBe(
      "[path] and [path], then [redacted]",
    );
    // A pair of surrogates decodes as one character; the text around it is read as ever.
    expect(redact(String.raw`emoji \ud83d\ude00 password\u003dhunter2xyz`)).toBe(
      String.raw`emoji \ud83d\ude00 password\u003d[redacted]`,
    );
  });

  it("reads a sensitive value and a policy pattern through escapes", () => {
    expect(
      redact(String.raw`no user \u0061lice.smith here`, { sensitiveValues: ["alice.smith"] }),
    ).toBe("no user [redacted] here");
    expect(redact("order ORD%2D12345 refused", { patterns: ["ORD-\\d+"] })).toBe(
      "order [redacted] refused",
    );
  });

  it("redacts a credential however each of its characters is escaped (property)", () => {
    const forms = (char: string) => {
      const code = char.charCodeAt(0).toString(16).padStart(2, "0");
      return fc.constantFrom(char, `\\u00${code}`, `\\x${code}`, `%${code.toUpperCase()}`);
    };
    const escaped = (text: string) =>
      fc.tuple(...[...text].map(forms)).map((parts) => parts.join(""));
    fc.assert(
      fc.property(escaped("password="), escaped("hunter2xyz9"), (key, value) => {
        const out = redact(`login failed: ${key}${value}`);
        expect(out.startsWith("login failed: ")).toBe(true);
        expect(out.endsWith("[redacted]")).toBe(true);
      }),
    );
  });

  it("never leaves a value percent-encoded after password= in any text around it (property)", () => {
    const word = fc.stringMatching(/^[a-z ]{0,12}$/);
    fc.assert(
      fc.property(word, word, (before, after) => {
        const out = redact(`${before} password%3Dhunter2xyz9 ${after}`);
        expect(out).not.toContain("hunter2");
      }),
    );
  });
});

describe("redact: an escape inside a secret the text as written shows only in part", () => {
  // As written, the URL's pattern stops at the `\`: a first pass over the text as written
  // replaced its head, and what followed the escape no longer read as part of a URL.
  it.each([
    [String.raw`connect postgres://user:pa\u0073sword@db.internal:5432/x failed`, "sword"],
    [String.raw`connect postgres://admin:S3cr3t\u0021Pw@10.0.0.5/db failed`, "Pw@"],
    [String.raw`connect postgres://user:p%40ss\u0077ord@db.internal/x failed`, "ord@"],
    [String.raw`connect postgres://user:pa\/ssw0rd@db.internal/x failed`, "ssw0rd"],
  ])("%s keeps nothing of the password", (text, tail) => {
    const out = redact(text);
    expect(out).not.toContain(tail);
    expect(out).toBe("connect [url] failed");
  });
});

describe("redact: an escape inside a key, a token or a query", () => {
  // As written, each pattern stops at the escape: a placeholder over one part left the other.
  it.each([
    [String.raw`found ghp_ABCD\u0045FGHIJKLMNOPQRSTUVWXYZabcdefghij in repo`, "ABCD"],
    [String.raw`found ghp_ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefg\u0068ij in repo`, "0068ij"],
    [String.raw`key sk-proj-ABCDEFGHIJKLMNOP\u0051RSTUVWXYZ0123456789abcd denied`, "RSTUVW"],
    [String.raw`bot xoxb-123456789012-1234567890123-AbCdEfGh\u0049jKlMnOpQrStUvWx denied`, "jKlMn"],
    [String.raw`jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc\u0031def456ghi failed`, "def456"],
    [String.raw`GET https://api.example.com/v1?token=abc\u0031234567890def failed`, "234567890"],
  ])("%s keeps none of it", (text, part) => {
    const out = redact(text);
    expect(out).not.toContain(part);
    expect(out).toMatch(/\[(?:token|redacted|url)\]|example\.com\/v1 failed/);
  });
});

describe("redact: a quoted credential holding an escaped quote", () => {
  // Ended at the escaped quote, the value's tail stayed.
  it.each([
    [String.raw`password: "hunter\"2xyzzy" rejected`, `password: "[redacted]" rejected`],
    [String.raw`password='it\'s-a-secret' rejected`, "password='[redacted]' rejected"],
  ])("%s keeps none of it", (text, redacted) => {
    expect(redact(text)).toBe(redacted);
  });
});
