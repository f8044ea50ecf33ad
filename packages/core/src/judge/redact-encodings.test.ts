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

describe("redact: near misses stay as written", () => {
  const kept = ["the token is expired", "token: invalid", "password must be at least 8 characters"];
  it.each(kept)("%s", (text) => {
    expect(redact(text)).toBe(text);
  });
});
