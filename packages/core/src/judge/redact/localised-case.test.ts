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
