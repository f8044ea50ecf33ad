import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { governor, governorBin, governorProcess } from "./cli.ts";

const dir = mkdtempSync(join(tmpdir(), "gov-check-"));
function policyFile(name: string, text: string): string {
  const file = join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe("governor check", () => {
  it("issue 9.8: refuses __proto__ names under tools and servers with their path, exit 1 (a real process)", async () => {
    // Written as JSON text: JSON.parse keeps "__proto__" as an own key, which the schema dropped.
    const file = policyFile(
      "proto.json",
      '{"tools": {"__proto__": {"effect": "read_only"}}, "servers": {"s": {"tools": {"__proto__": {"effect": "read_only"}}}, "__proto__": {}}}',
    );
    const r = await governorProcess(["check", file]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("(3 issues)");
    expect(r.stdout).toContain('tools.__proto__: "__proto__" is not accepted as a name');
    expect(r.stdout).toContain("servers.s.tools.__proto__");
    expect(r.stdout).toContain("servers.__proto__");
  });

  it("issue 8.12: refuses a pattern the linear-time engine cannot run, with its path", async () => {
    const file = policyFile(
      "regex.json",
      JSON.stringify({
        tools: { pay: { rules: [{ match: "(a)\\1", action: "stop" }] } },
        defaults: { rules: [{ match: "quota.*reset", action: "stop" }] },
      }),
    );
    const r = await governor(["check", file]);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("(1 issue)");
    expect(r.stdout).toContain(
      "tools.pay.rules.0.match: must be a regular expression in RE2 syntax",
    );
  });

  it("runs from the package's bin by its shebang: its output and exit status come through", async () => {
    const bad = policyFile("bin-bad.json", JSON.stringify({ budgets: { calls: -1 } }));
    const refused = await governorBin(["check", bad]);
    expect(refused.status).toBe(1);
    expect(refused.stdout).toContain("budgets.calls");
    expect(refused.stderr).toBe("");
  });

  it("accepts names that are Object.prototype members and prints them back", async () => {
    const file = policyFile(
      "names.json",
      JSON.stringify({ tools: { constructor: { effect: "read_only" }, toString: {} } }),
    );
    const r = await governor(["check", file]);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout).tools.constructor).toEqual({ effect: "read_only" });
  });
});
