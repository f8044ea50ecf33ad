/**
 * attack27: a browser's stack frames reached the model: V8's bare `at https://cdn.example.com/
 * app.min.js:1:23456` (the `at` rules read a location that is a path, `file:` or `node:`, not a
 * served script) and SpiderMonkey/JavaScriptCore's `render@https://…/app.min.js:1:23456`,
 * `global code@webpack://…` (no rule read the `@` frames). Through a run with a host executor.
 * Near misses stay: a URL with a port, a URL then a time, an e-mail address, a docs link.
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

describe("attack27: a browser's stack frames", () => {
  const traces: [string, string][] = [
    ["TypeError: n is undefined\n    at https://cdn.example.com/app.min.js:1:23456", "app.min.js"],
    [
      "TypeError: n is undefined\n    at async https://cdn.example.com/assets/index-4f2a.js:12:345",
      "index-4f2a.js",
    ],
    ["TypeError: n is undefined at https://cdn.example.com/app.min.js:1:23456", "app.min.js"],
    [
      "TypeError: n is undefined\nrender@https://cdn.example.com/app.min.js:1:23456\n@https://cdn.example.com/vendor.js:2:100",
      ".js",
    ],
    ["TypeError: n is undefined\nglobal code@webpack://app/src/notes.ts:42:7", "notes.ts"],
    ["TypeError: n is undefined render@https://cdn.example.com/app.min.js:1:23456", "app.min.js"],
  ];
  for (const [message, location] of traces) {
    it(`${JSON.stringify(message)}: the model reads no frame`, async () => {
      const text = await modelText(message);
      expect(text).toContain("n is undefined");
      expect(text).not.toContain(location);
      expect(text).not.toContain(":23456");
    });
  }

  const kept = [
    "The service is reachable at https://api.example.com:8443",
    "retry at https://status.example.com/incidents/42 after 12:30",
    "contact ops@example.com at 12:30",
    "see https://docs.example.com/errors/E42 for details",
  ];
  for (const message of kept) {
    it(`"${message}" stays readable`, async () => {
      expect(await modelText(message)).toContain(message);
    });
  }
});
