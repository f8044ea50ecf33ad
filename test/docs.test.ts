import { readFileSync } from "node:fs";
import { REASONS } from "@governor/core";
import { describe, expect, it } from "vitest";

const doc = (name: string) => readFileSync(new URL(`../docs/${name}`, import.meta.url), "utf8");

describe("docs stay true to the code", () => {
  it("lists every reason of the closed set with its usual action", () => {
    const text = doc("stop-reasons.md");
    for (const [reason, action] of Object.entries(REASONS)) {
      expect(text, reason).toMatch(new RegExp(`\\|\\s*\`${reason}\`\\s*\\|\\s*${action}\\s*\\|`));
    }
  });

  it("names every metric the recorder emits", () => {
    const text = doc("telemetry.md");
    for (const name of [
      "governor.tool.calls",
      "governor.tool.failures",
      "governor.retries",
      "governor.runs.stopped",
      "governor.run.duration",
    ]) {
      expect(text).toContain(name);
    }
  });
});
