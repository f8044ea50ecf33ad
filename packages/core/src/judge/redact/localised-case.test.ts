/**
 * A localised password's name in capitals as its language writes them: Turkish `ŞİFRE` (a dotted
 * capital İ, which no case-insensitive pattern reads as `i`) and Greek `ΚΩΔΙΚΟΣ` (capitals drop the
 * accent: `κωδικός` read without it). Both kept their value before.
 */
import { describe, expect, it } from "vitest";
import { redact } from "../redact.ts";

describe("localised password names in their languages' capitals", () => {
  it.each([
    "ŞİFRE: Geheim123!",
    "Şİfre= Geheim123!",
    "şıfre: Geheim123!",
    "ΚΩΔΙΚΟΣ: Geheim123!",
    "κωδικος： Geheim123!",
  ])("%s", (text) => {
    expect(redact(text)).not.toContain("Geheim123");
  });
});

describe("localised passwords in a JSON string, a line each", () => {
  it.each([
    "passwort=Tr0ub4dor&3\\nmot de passe: Zx9#kLm2qR",
    "contraseña: abc123x\\nпароль: Zx9#kLm2qR",
    "Passwort: abc123x\\r\\nPasswort: Zx9#kLm2qR",
    "şifre=Tr0ub4dor&3\\tmot de passe: Zx9#kLm2qR",
  ])("%s: the second line's value goes too", (text) => {
    const out = redact(text);
    expect(out).not.toContain("Zx9");
    expect(out).not.toMatch(/Tr0ub|abc123/);
  });
});

it("a password that holds an escaped backslash before an n goes whole", () => {
  expect(redact("Passwort: ab\\\\ncd9x\\nweiter")).toBe("Passwort: [redacted]\\nweiter");
});

it("a localised password's value on the line after its name, in a JSON string, goes", () => {
  expect(redact("κωδικός = \\nGeheim123!")).not.toContain("Geheim");
});
