/**
 * Issue 29: redaction leaves the model what it needs to correct a path, with the real
 * @modelcontextprotocol/server-filesystem over stdio: the path the model sent (in the server's
 * ENOENT text) and the directories the server lists as allowed (in its refusal). What the model
 * did not send, a secret-shaped token it did send, and an argument the policy marks sensitive
 * stay redacted.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, type PolicyInput } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = new URL("..", import.meta.url).pathname;
const SERVER = join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");

let base: string;
let allowed: string;
let outside: string;
let client: Client;

beforeAll(async () => {
  // realpath: the server names directories resolved (macOS's /var is /private/var).
  base = realpathSync(mkdtempSync(join(tmpdir(), "governor-fs-redaction-")));
  allowed = join(base, "project");
  outside = join(base, "elsewhere-internal");
  mkdirSync(allowed);
  mkdirSync(outside);
  writeFileSync(join(outside, "target.txt"), "not for the model");
  symlinkSync(join(outside, "target.txt"), join(allowed, "link.txt"));
  client = new Client({ name: "governor-fs-redaction", version: "0.1.0" });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [SERVER, allowed],
      stderr: "ignore",
    }),
  );
}, 60_000);

afterAll(async () => {
  await client?.close();
  rmSync(base, { recursive: true, force: true });
});

/** What the model reads for one call of `tool` with `args`, under `policy`. */
async function modelReads(
  tool: string,
  args: Record<string, unknown>,
  policy: PolicyInput = {},
): Promise<string> {
  const governor = createGovernor(
    { ...policy, tools: { "*": { effect: "read_only" }, ...policy.tools } },
    { metrics: false },
  );
  const notes = governClient(client, { governor, server: "filesystem" });
  const outcome = await notes.callTool(governor.startRun(), { name: tool, arguments: args });
  expect(outcome.kind, JSON.stringify(outcome)).not.toBe("ok");
  const result = toModelResult(outcome) as CallToolResult;
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
}

/** The raw text the server answers, without Governor. */
async function serverSays(tool: string, args: Record<string, unknown>): Promise<string> {
  const result = (await client.callTool({ name: tool, arguments: args })) as CallToolResult;
  expect(result.isError).toBe(true);
  return result.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
}

describe("redaction with the real filesystem server", () => {
  it("shows the model its own path in the server's ENOENT text", async () => {
    const path = join(allowed, "notes", "missing.txt");
    expect(await serverSays("read_text_file", { path })).toContain(path);
    const text = await modelReads("read_text_file", { path });
    expect(text).toContain(path);
    expect(text).toMatch(/ENOENT|no such file/i);
  });

  it("shows the allowed directory the server names when it refuses a path outside it", async () => {
    const path = "/etc/governor-not-allowed.txt";
    const raw = await serverSays("read_text_file", { path });
    expect(raw).toContain(`not in ${allowed}`);
    const text = await modelReads("read_text_file", { path });
    expect(text).toContain(allowed);
    expect(text).toContain(path);
  });

  it("still hides a path the model did not send: the target of a symlink outside the allowed directory", async () => {
    const path = join(allowed, "link.txt");
    const raw = await serverSays("read_text_file", { path });
    expect(raw).toContain(outside);
    const text = await modelReads("read_text_file", { path });
    expect(text).not.toContain(outside);
    expect(text).toContain(allowed); // the allowed directory the refusal names
    expect(text).toContain("[path]");
  });

  it("a secret-shaped token in the model's own path stays redacted", async () => {
    const token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
    const path = join(allowed, token, "missing.txt");
    expect(await serverSays("read_text_file", { path })).toContain(token);
    const text = await modelReads("read_text_file", { path });
    expect(text).not.toContain(token);
  });

  it("an argument the policy marks sensitive stays redacted though the model sent it", async () => {
    const path = join(allowed, "diary", "missing.txt");
    const text = await modelReads(
      "read_text_file",
      { path },
      { tools: { read_text_file: { effect: "read_only", sensitiveArgs: ["path"] } } },
    );
    expect(text).not.toContain(path);
    expect(text).not.toContain("diary");
  });
});
