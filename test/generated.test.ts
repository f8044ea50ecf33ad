// The files made from code (the reasons table of docs/stop-reasons.md, the policy's JSON Schema)
// are checked in as `pnpm gen` makes them, so `pnpm test` catches one edited by hand or left
// behind by a change to packages/core/src/reasons.ts or to the policy's zod schema.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { REASONS } from "../packages/core/src/reasons.ts";
import {
  firstDifference,
  GENERATED,
  generatedStates,
  REASONS_END,
  REASONS_START,
  reasonsSection,
} from "../scripts/generated.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const tsx = import.meta.resolve("tsx");

/** `pnpm gen ARGS` as a child process on the repository at `root`. */
function gen(root: string, ...args: string[]) {
  const ran = spawnSync(
    process.execPath,
    ["--conditions=source", "--import", tsx, join(ROOT, "scripts/gen.ts"), "--root", root, ...args],
    { encoding: "utf8" },
  );
  return { status: ran.status, stdout: ran.stdout, stderr: ran.stderr };
}

/** A copy of the generated files in a fresh directory, `edit` applied to each text. */
function copyOfRepository(edit: (path: string, text: string) => string = (_, t) => t): string {
  const root = mkdtempSync(join(tmpdir(), "governor-gen-"));
  for (const { path } of GENERATED) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), edit(path, readFileSync(join(ROOT, path), "utf8")));
  }
  copies.push(root);
  return root;
}
const copies: string[] = [];
afterEach(() => {
  for (const dir of copies.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the files pnpm gen writes", () => {
  it("are checked in as code makes them (run pnpm gen after changing reasons.ts or the policy schema)", () => {
    for (const { file, current, expected } of generatedStates(ROOT)) {
      expect(firstDifference(current, expected), file.path).toBeUndefined();
    }
  });

  it("the reasons table has one row per reason, in the registry's order", () => {
    const rows = reasonsSection()
      .split("\n")
      .filter((line) => line.startsWith("| `"))
      .map((line) => line.split("|")[1]?.trim());
    expect(rows).toEqual(Object.keys(REASONS).map((r) => `\`${r}\``));
  });

  it("--check exits 1 naming the stale file and the line that differs; pnpm gen repairs it", () => {
    const root = copyOfRepository((path, text) =>
      path === "docs/stop-reasons.md" ? text.replace("permission denied", "access denied") : text,
    );
    const checked = gen(root, "--check");
    expect(checked.status).toBe(1);
    expect(checked.stderr).toContain(
      "docs/stop-reasons.md is stale: it is not what packages/core/src/reasons.ts makes",
    );
    expect(checked.stderr).toContain("access denied");
    expect(checked.stderr).not.toContain("policy.schema.json");
    expect(checked.stdout).toContain("packages/core/policy.schema.json is up to date");

    const written = gen(root);
    expect(written.status).toBe(0);
    expect(written.stdout).toContain("wrote docs/stop-reasons.md");
    expect(readFileSync(join(root, "docs/stop-reasons.md"), "utf8")).toBe(
      readFileSync(join(ROOT, "docs/stop-reasons.md"), "utf8"),
    );
    expect(gen(root, "--check").status).toBe(0);
  });

  it("--check names a stale JSON Schema too", () => {
    const root = copyOfRepository((path, text) =>
      path.endsWith(".json") ? text.replace('"maxLength": 300', '"maxLength": 200') : text,
    );
    const checked = gen(root, "--check");
    expect(checked.status).toBe(1);
    expect(checked.stderr).toContain(
      "packages/core/policy.schema.json is stale: it is not what packages/core/src/policy/policy.ts makes",
    );
    expect(checked.stderr).not.toContain("stop-reasons.md");
  });

  it("refuses a page that lost its markers, naming the lines it needs, and writes nothing", () => {
    const root = copyOfRepository((path, text) =>
      path.endsWith(".md") ? text.replace(`${REASONS_END}\n`, "") : text,
    );
    const before = readFileSync(join(root, "docs/stop-reasons.md"), "utf8");
    const ran = gen(root);
    expect(ran.status).toBe(2);
    expect(ran.stderr).toContain("docs/stop-reasons.md lacks the marker lines");
    expect(ran.stderr).toContain(REASONS_START);
    expect(ran.stderr).toContain(REASONS_END);
    expect(readFileSync(join(root, "docs/stop-reasons.md"), "utf8")).toBe(before);
  });

  it("refuses an unknown argument, saying which are accepted", () => {
    const ran = gen(ROOT, "--fix");
    expect(ran.status).toBe(2);
    expect(ran.stderr).toContain('unknown argument "--fix" (accepted: --check, --root <dir>)');
  });
});
