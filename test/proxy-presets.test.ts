/**
 * Issue 29: `governor proxy` in front of the real @modelcontextprotocol/server-filesystem. With
 * its default policy every tool is a write, so a second identical read of a missing file is
 * refused as a write that may have happened; with `--preset filesystem` or
 * `--trust-annotations` it is read again. The shipped presets name the tools the real servers
 * list, each with an effect.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { presetFile } from "../packages/cli/src/proxy/policy-source.ts";
import { ROOT, startDirect, startHost, textOf } from "./proxy-support.ts";

// Each test starts the proxy (node with tsx) and a server: seconds on a loaded machine.
const PROXY_MS = 120_000;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "governor-proxy-preset-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const filesystem = () => ({
  command: process.execPath,
  args: [join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), dir],
});
const everything = {
  command: process.execPath,
  args: [join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
};

/** What the model reads for the same read of a missing file, twice, through the proxy. */
async function readMissingTwice(proxyArgs: string[]): Promise<[string, string]> {
  const host = await startHost(proxyArgs, filesystem());
  try {
    const call = () =>
      host.client.callTool({
        name: "read_text_file",
        arguments: { path: join(dir, "missing.txt") },
      });
    const first = await call();
    const second = await call();
    return [textOf(first), textOf(second)];
  } finally {
    await host.close();
  }
}

describe("governor proxy's starter policies", () => {
  it(
    "the default policy takes a read for a write: the second identical read is refused",
    async () => {
      const [, second] = await readMissingTwice([]);
      expect(second).toMatch(/may have/i);
      expect(second).not.toMatch(/ENOENT|no such file/i);
    },
    PROXY_MS,
  );

  it(
    "--preset filesystem: the second identical read is read again",
    async () => {
      const [first, second] = await readMissingTwice(["--preset", "filesystem"]);
      for (const text of [first, second]) {
        expect(text).toMatch(/ENOENT|no such file/i);
        expect(text).not.toMatch(/may have/i);
      }
    },
    PROXY_MS,
  );

  it(
    "--trust-annotations: the server's readOnlyHint makes it a read",
    async () => {
      const [first, second] = await readMissingTwice(["--server", "fs", "--trust-annotations"]);
      for (const text of [first, second]) {
        expect(text).toMatch(/ENOENT|no such file/i);
        expect(text).not.toMatch(/may have/i);
      }
    },
    PROXY_MS,
  );

  it.each([
    ["filesystem", filesystem],
    ["everything", () => everything],
  ] as const)(
    "the %s preset gives an effect to every tool the real server lists",
    async (name, server) => {
      // A host with every capability, for the tools a server lists only to such hosts.
      const direct = await startDirect(server(), {
        sampling: {},
        roots: { listChanged: true },
        elicitation: { form: {}, url: {} },
      });
      try {
        const listed = (await direct.listTools()).tools.map((t) => t.name);
        const preset = JSON.parse(readFileSync(presetFile(name), "utf8"));
        const named = Object.keys(preset.servers[name].tools);
        expect(listed.filter((t) => !named.includes(t))).toEqual([]);
        expect(listed.length).toBeGreaterThan(5);
      } finally {
        await direct.close();
      }
    },
    PROXY_MS,
  );
});
