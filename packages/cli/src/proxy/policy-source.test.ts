// Issue 29: `governor proxy` with a starter policy for a common server (`--preset`) or the
// server's own annotations (`--trust-annotations`), instead of every tool being a write.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadPolicy } from "@governor/core";
import { resolveEffect, resolveToolPolicy } from "@governor/core/judge";
import { describe, expect, it } from "vitest";
import { parseProxyArgs } from "./command.ts";
import { loadProxyPolicy, PRESETS, presetFile } from "./policy-source.ts";

describe("governor proxy --preset / --trust-annotations: the command line", () => {
  it("takes a preset and the flag", () => {
    expect(
      parseProxyArgs(["--preset", "filesystem", "--trust-annotations", "--", "s"]),
    ).toMatchObject({ preset: "filesystem", trustAnnotations: true });
    expect(parseProxyArgs(["--server", "fs", "--trust-annotations", "--", "s"])).toMatchObject({
      server: "fs",
      trustAnnotations: true,
    });
    expect(parseProxyArgs(["--", "s"])).not.toHaveProperty("trustAnnotations");
  });

  it.each([
    [
      ["--preset", "postgres", "--", "s"],
      /--preset "postgres": expected one of everything, filesystem, git/,
    ],
    [["--preset", "git", "--policy", "p.json", "--", "s"], /either --policy FILE or --preset NAME/],
    [["--trust-annotations", "--", "s"], /--trust-annotations needs --server NAME/],
  ])("refuses %j, saying what is accepted", (argv, message) => {
    expect(() => parseProxyArgs(argv as string[])).toThrow(message);
  });
});

describe("loadProxyPolicy", () => {
  const effectOf = (
    policy: Awaited<ReturnType<typeof loadProxyPolicy>>,
    tool: string,
    annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean; destructiveHint?: boolean },
  ) => {
    const tp = resolveToolPolicy(policy.policy, tool, policy.server);
    return resolveEffect(tp.effect, tp.trustAnnotations, annotations);
  };

  it("every preset is a valid policy for the server it is named after", () => {
    for (const name of PRESETS) {
      const input = JSON.parse(readFileSync(presetFile(name), "utf8"));
      expect(Object.keys(input.servers), name).toEqual([name]);
      expect(() => loadPolicy(input), name).not.toThrow();
    }
  });

  it("a preset files its settings under its name, or under --server", async () => {
    const fs = await loadProxyPolicy({ preset: "filesystem" });
    expect(fs.server).toBe("filesystem");
    expect(effectOf(fs, "read_text_file")).toBe("read_only");
    expect(effectOf(fs, "write_file")).toBe("idempotent");
    expect(effectOf(fs, "edit_file")).toBe("mutating");
    const named = await loadProxyPolicy({ preset: "filesystem", server: "docs" });
    expect(named.server).toBe("docs");
    expect(effectOf(named, "read_text_file")).toBe("read_only");
  });

  it("without either, a tool is a write, whatever its annotations say", async () => {
    const plain = await loadProxyPolicy({});
    expect(effectOf(plain, "read_text_file", { readOnlyHint: true })).toBe("mutating");
  });

  it("--trust-annotations lets the server's annotations set effects, added to a policy file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "governor-proxy-policy-"));
    const file = join(dir, "policy.json");
    writeFileSync(
      file,
      JSON.stringify({ servers: { fs: { tools: { pay: { effect: "mutating" } } } } }),
    );
    const trusted = await loadProxyPolicy({ policy: file, server: "fs", trustAnnotations: true });
    expect(effectOf(trusted, "read_text_file", { readOnlyHint: true })).toBe("read_only");
    expect(effectOf(trusted, "pay", { readOnlyHint: true })).toBe("mutating"); // the policy wins
    expect(effectOf(trusted, "write_file", { readOnlyHint: false, idempotentHint: true })).toBe(
      "idempotent",
    );
  });

  it("a policy file that is not JSON is refused as `governor check` refuses it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "governor-proxy-policy-"));
    const file = join(dir, "policy.json");
    writeFileSync(file, "{ nope");
    await expect(loadProxyPolicy({ policy: file })).rejects.toThrow(/Policy is not valid JSON/);
  });
});
