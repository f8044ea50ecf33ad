/**
 * attack27: a credential told in English prose under the bare noun "key" ("the key is
 * 9f8e7d6c5b4a3210", "the encryption key was …", "your license key is '…'") reached the model:
 * the prose rule read "API key", "secret key", not "key" alone. Through a run with a host
 * executor (what every adapter hands on). Near misses stay: "the key is missing", "the partition
 * key is region", "the key is user_id", an object key `notes/2024/draft.md`.
 */
import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";

async function modelText(message: string): Promise<string> {
  const run = createGovernor({ tools: { "*": { effect: "read_only" } } }).startRun();
  const outcome = await run.call({ tool: "get_note", args: {} }, async () => {
    throw new Error(message);
  });
  if (outcome.kind === "ok") throw new Error("the failure was read as a success");
  return outcome.result.content.map((c) => c.text).join("\n");
}

describe("attack27: a credential told under the bare noun 'key'", () => {
  const told: [string, string][] = [
    ["Signature mismatch: the key is 9f8e7d6c5b4a3210", "9f8e7d6c5b4a3210"],
    [
      "The encryption key was 0a1b2c3d4e5f60718293a4b5, which is revoked.",
      "0a1b2c3d4e5f60718293a4b5",
    ],
    ["Your license key is 'AbCd3FgH1jKlMn0pQr5tUv' and it expired", "AbCd3FgH1jKlMn0pQr5tUv"],
    [
      "the signing key is now 3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b.",
      "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b",
    ],
  ];
  for (const [message, secret] of told) {
    it(`"${message}": the model does not read the key`, async () => {
      const text = await modelText(message);
      expect(text).not.toContain(secret);
    });
  }

  const kept = [
    "the key is missing",
    "The key is required for this call",
    "the partition key is region",
    "the key is user_id",
    "the key is 12345",
    "the key is notes/2024/draft.md",
    "the primary key is (id, created_at)",
  ];
  for (const message of kept) {
    it(`"${message}" stays readable`, async () => {
      expect(await modelText(message)).toContain(message);
    });
  }
});
