/**
 * Secrets behind the encodings an error text carries them in when a server quotes another
 * system's answer: JSON inside JSON whose value holds an escaped quote, HTML entities, base64 of a
 * body or of HTTP Basic credentials, a quoted value a line break splits, and key shapes without a
 * label (Azure AD client secrets, Google Cloud Storage HMAC keys). Each case names what must not
 * survive; the near misses below are texts that must stay as written.
 */
import { describe, expect, it } from "vitest";
import { redact } from "./redact.ts";

const T = "Zq8vX2mN4pL7rT1w";
const b64 = (text: string) => Buffer.from(text).toString("base64");

describe("redact: JSON inside JSON, the value holding an escaped quote", () => {
  // Read with every layer decoded at once, the inner `\"` closes the value early and its tail
  // reads as text; each layer is read decoded on its own as well.
  const cases: [string, string][] = [
    [String.raw`{"error":"{\"password\":\"${T}\\\"tail${T}\"}"}`, "tail"],
    [String.raw`{"e":"{\"token\":\"\\\"${T}\\\"\"}"}`, T],
    [String.raw`{"e":"password=\"ab\\\"cd${T}\""}`, "cd"],
    [String.raw`{"e":"token=\"${T}\\\\\\\"${T}\""}`, T],
    [JSON.stringify({ error: JSON.stringify({ client_secret: `${T}"quoted${T}` }) }), "quoted"],
    [JSON.stringify({ e: JSON.stringify({ e: JSON.stringify({ password: `a"b${T}` }) }) }), T],
  ];
  it.each(cases)("%s loses %s", (text, secret) => {
    const out = redact(text, { maxLength: 2000 });
    expect(out).not.toContain(secret);
    expect(out).toContain("[redacted]");
  });

  it("keeps the JSON around the value as written", () => {
    expect(
      redact(JSON.stringify({ error: JSON.stringify({ password: `${T}"tail${T}`, id: 7 }) })),
    ).toBe(String.raw`{"error":"{\"password\":\"[redacted]\",\"id\":7}"}`);
  });
});

describe("redact: HTML entities", () => {
  const cases: [string, string, string][] = [
    [`{&quot;token&quot;:&quot;${T}&quot;}`, T, "{&quot;token&quot;:&quot;[redacted]&quot;}"],
    [
      `{&#34;password&#34;:&#34;pa ss word&#34;}`,
      "ss word",
      "{&#34;password&#34;:&#34;[redacted]&#34;}",
    ],
    [`{&#x22;password&#x22;:&#x22;${T}&#x22;}`, T, "{&#x22;password&#x22;:&#x22;[redacted]&#x22;}"],
    [`&lt;password&gt;${T}&lt;/password&gt;`, T, "&lt;password&gt;[redacted]&lt;/password&gt;"],
    [`token&#61;${T}`, T, "token&#61;[redacted]"],
    // The value as written runs over `&quot` (no pattern reads entities): the entity goes too.
    [`&quot;the password is ${T}&quot;`, T, "&quot;the password is [redacted];"],
    ["open &#x2F;home&#x2F;alice&#x2F;.ssh&#x2F;id_rsa failed", "alice", "open [path] failed"],
  ];
  it.each(cases)("%s", (text, secret, expected) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toBe(expected);
  });
});

describe("redact: base64", () => {
  it("replaces HTTP Basic credentials wherever they stand", () => {
    for (const text of [
      `Basic ${b64("alice:hunter2")}`,
      `{"auth":"Basic ${b64("alice:hunter2")}"}`,
      `sent basic ${b64("svc:S3cr3t!")} upstream`,
    ]) {
      const out = redact(text);
      expect(out, text).not.toContain(b64("alice:hunter2").slice(0, 8));
      expect(out, text).not.toContain(b64("svc:S3cr3t!").slice(0, 8));
      expect(out, text).toContain("[token]");
    }
  });

  it("replaces base64 of a JSON object too short for a key's shape", () => {
    for (const text of [
      `data:application/json;base64,${b64('{"password":"hunter2"}')}`,
      `payload ${b64('{"pw":"x1"}')}`,
    ]) {
      expect(redact(text), text).toContain("[token]");
      expect(redact(text), text).not.toContain("eyJ");
    }
  });
});

describe("redact: keys known by their shape", () => {
  it("replaces an Azure AD client secret and a Google Cloud Storage HMAC access id", () => {
    const azure = "xyz8Q~abcDEF1234ghiJKL5678mnoPQR9~stuVWx";
    const goog = "GOOG1EABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ABCDEFGHIJKLMNOPQRS";
    expect(redact(`secret ${azure} rejected`)).toBe("secret [token] rejected");
    expect(redact(`access id ${goog} unknown`)).toBe("access id [token] unknown");
  });
});

describe("redact: a quoted value a line break splits from its quote", () => {
  it("replaces the value after the break", () => {
    // Two text blocks read one a line: `password: "` then the value.
    for (const text of [`password: "\n${T}"`, `{"token":"\n  ${T}"}`]) {
      expect(redact(text), text).not.toContain(T);
    }
  });
});

describe("redact: a quoted value a line break splits inside it", () => {
  it("replaces the part after the break, up to the closing quote", () => {
    // Failed before: the value ended at the break, and the line after it reached the model.
    for (const text of [
      `"password": "abc\n${T}"`,
      `{"token":"abcd\n  ${T}"}`,
      `password: "abcdef\r\n${T}"`,
      `password='abc\n${T}'`,
    ]) {
      expect(redact(text), text).not.toContain(T);
    }
  });

  it("a quote left open on its line does not take the next line with it", () => {
    expect(redact(`password: "abc\nconnection refused by the server`)).toBe(
      'password: "[redacted] connection refused by the server',
    );
  });
});

describe("redact: values told in other file formats and command lines", () => {
  const cases: [string, string][] = [
    // A YAML block scalar: the value is on the next line.
    [`password: |\n  ${T}\n`, "password: [redacted]"],
    [`api_token: >-\n  ${T}`, "api_token: [redacted]"],
    // A .netrc line: no separator between the name and the value.
    [
      `machine api.example.com login bob password ${T}`,
      "machine api.example.com login bob password [redacted]",
    ],
    // sshpass takes the password after `-p`.
    [`sshpass -p '${T}' ssh deploy@host failed`, "sshpass -p '[redacted]' ssh deploy@host failed"],
    [`sshpass -p ${T} scp a b`, "sshpass -p [redacted] scp a b"],
  ];
  it.each(cases)("%s", (text, expected) => {
    expect(redact(text)).toBe(expected);
  });
});

describe("redact: file URIs with one slash (Java's URL form)", () => {
  const cases: [string, string][] = [
    ["\tat com.x.Y.z(Y.java:1) ~[file:/C:/Users/alice/app.jar:?]", "alice"],
    ["loaded x from jar:file:/home/alice/app.jar!/com/x", "alice"],
    ["cannot read file:/home/alice/.m2/settings.xml", "alice"],
  ];
  it.each(cases)("%s", (text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain("[path]");
  });
});

describe("redact: what a JSON line break or tab is glued to", () => {
  // `JSON.stringify` of a multi-line error: `\n` and `\t` are two characters as written, and the
  // `n` or `t` reads as the end of a word to every rule that wants none before its match.
  const cases: [string, string][] = [
    [JSON.stringify({ error: "bad config\n/home/alice/.env missing" }), "alice"],
    [JSON.stringify({ error: "refused\n10.0.0.5:5432" }), "10.0.0.5"],
    [JSON.stringify({ error: "key\tAKIAIOSFODNN7EXAMPLE rejected" }), "IOSFODNN7"],
    [JSON.stringify({ error: `jwt\neyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.${T}` }), T],
    [JSON.stringify({ error: `run with\n--password ${T}` }), T],
    [
      JSON.stringify({
        panic: "goroutine 1 [running]:\nmain.main()\n\t/home/alice/go/main.go:5 +0x1",
      }),
      "alice",
    ],
    // A JVM trace in a JSON string: its frames go, as they do on lines of their own.
    [
      JSON.stringify({
        trace:
          "java.lang.IllegalStateException: x\n\tat com.acme.A.b(A.java:1)\n\tat com.acme.M.main(M.java:2)",
      }),
      "com.acme",
    ],
  ];
  it.each(cases)("%s", (text, secret) => {
    expect(redact(text)).not.toContain(secret);
  });

  it("keeps a Windows path the model sent, whose `\\n` and `\\t` are separators, not escapes", () => {
    const path = "C:\\Users\\bob\\notes\\todo.txt";
    expect(redact(`open ${path} failed: not found`, { keepValues: [path] })).toBe(
      `open ${path} failed: not found`,
    );
    expect(redact(`open ${path} failed: \\"x\\"`, { keepValues: [path] })).toContain(path);
  });
});

describe("redact: near misses stay as written", () => {
  const kept = [
    "the token is expired",
    "token: invalid",
    "password must be at least 8 characters",
    "Basic authentication is not enabled",
    "use basic auth",
    "Basic usage: call list_notes first",
    "Tom &amp; Jerry &lt;3",
    "a &quot;token&quot; is required",
    "&quot;token&quot; is expired",
    "Q~ is not a valid query",
    "GOOG1 is a region alias",
    "the &#34;password&#34; field is empty",
    "password: | is not valid YAML here",
    "enter your login and password then retry",
    "sshpass is not installed",
    "see file:README for details",
  ];
  it.each(kept)("%s", (text) => {
    expect(redact(text)).toBe(text);
  });
});
