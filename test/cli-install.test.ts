// Issue 29: the CLI as installed from the README's line: `--version`, and `@governor/redis` as an
// optional peer (only a redis:// store needs it; without it, a clear message with the install line).
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { governor, governorProcess } from "./cli.ts";

// Each of these starts a Node process with tsx: seconds on a loaded machine.
const CLI_MS = 120_000;

const cliPackage = JSON.parse(
  readFileSync(new URL("../packages/cli/package.json", import.meta.url), "utf8"),
) as {
  version: string;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
};

/**
 * A Node flag that makes `@governor/redis` not installed for the child: a resolve hook looks the
 * specifier up from the file system's root, where no package is installed, so Node itself fails the
 * import with its own ERR_MODULE_NOT_FOUND naming `@governor/redis`, as it does in a project where
 * only the README's CLI line was installed.
 */
const WITHOUT_REDIS = [
  "--import",
  `data:text/javascript,${encodeURIComponent(`
    import { register } from "node:module";
    register("data:text/javascript," + encodeURIComponent(
      "export async function resolve(specifier, context, next) {" +
      "  return next(specifier, specifier === '@governor/redis' ? { ...context, parentURL: 'file:///' } : context);" +
      "}"));
  `)}`,
];

describe("governor --version", () => {
  it(
    "prints the CLI package's version and nothing else, exit 0 (a real process)",
    async () => {
      const ran = await governorProcess(["--version"]);
      expect(ran.stderr).toBe("");
      expect(ran.stdout).toBe(`${cliPackage.version}\n`);
      expect(ran.status).toBe(0);
    },
    CLI_MS,
  );

  it("without a command says none was given (not 'unknown command \"\"'), with the usage, exit 2", async () => {
    const ran = await governor([]);
    expect(ran.stderr).toMatch(/^governor: no command given\n\nUsage: governor <command>/);
    expect(ran.stdout).toBe("");
    expect(ran.status).toBe(2);
    expect((await governor(["dmeo"])).stderr).toMatch(/^governor: unknown command "dmeo"\n/);
  });

  it("-v is the same, and help lists it", async () => {
    expect((await governor(["-v"])).stdout).toBe(`${cliPackage.version}\n`);
    expect((await governor(["help"])).stdout).toMatch(/--version, -v\s+print the CLI's version/);
  });
});

describe("@governor/redis is an optional peer of the CLI", () => {
  it("is not a dependency: the README's tarball lines install the CLI without it", () => {
    expect(cliPackage.dependencies).not.toHaveProperty("@governor/redis");
    expect(cliPackage.peerDependencies).toHaveProperty("@governor/redis");
    expect(cliPackage.peerDependenciesMeta?.["@governor/redis"]?.optional).toBe(true);
  });

  it(
    "without it, a redis:// store is refused with what to install, exit 1 (a real process)",
    async () => {
      const ran = await governorProcess(
        ["learned", "list", "--store", "redis://user:hunter2@127.0.0.1:1"],
        undefined,
        WITHOUT_REDIS,
      );
      expect(ran.stderr).toBe(
        "governor learned: a redis:// store needs @governor/redis, which is not installed: install it " +
          "next to the CLI (npm i -D @governor/redis), or give a JSON snapshot file written by " +
          "`governor learned list --json`\n",
      );
      expect(ran.stdout).toBe("");
      expect(ran.status).toBe(1);
    },
    CLI_MS,
  );

  it(
    "without it, governor proxy --store redis:// says what to install once, local or global, exit 1",
    async () => {
      const ran = await governorProcess(
        ["proxy", "--store", "redis://127.0.0.1:1", "--server", "notes", "--", "node", "server.js"],
        undefined,
        WITHOUT_REDIS,
      );
      expect(ran.stderr).toBe(
        "governor proxy: --store: @governor/redis is not installed: install it next to the CLI " +
          "(npm i @governor/redis; npm i -g @governor/redis beside a global governor)\n",
      );
      expect(ran.status).toBe(1);
    },
    CLI_MS,
  );

  it(
    "without it, every other command runs: classify, and learned list from a snapshot file",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "governor-no-redis-"));
      const snapshot = join(dir, "learned.json");
      writeFileSync(snapshot, JSON.stringify({ records: [] }));
      const ran = await governorProcess(
        ["classify", "--learned", snapshot],
        '{"tool":"get_note","text":"no note with id \\"drafts\\""}\n',
        WITHOUT_REDIS,
      );
      expect(ran.stderr).toBe("");
      expect(JSON.parse(ran.stdout)).toMatchObject({ action: "correct_arguments" });
      expect(ran.status).toBe(0);
    },
    CLI_MS,
  );
});
