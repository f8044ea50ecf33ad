/**
 * `governor proxy` in front of real servers from the npm registry: everything that is not a tool
 * call passes through unchanged (compared with a direct connection), server-to-host requests
 * (sampling, roots) and progress reach the host, and a real server's failure text reaches the
 * model redacted.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CreateMessageRequestSchema,
  type JSONRPCMessage,
  ListRootsRequestSchema,
  type Progress,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, startDirect, startHost, textOf } from "./proxy-support.ts";

const EVERYTHING = {
  command: process.execPath,
  args: [join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"), "stdio"],
};

const HOST_CAPABILITIES = { sampling: {}, roots: { listChanged: true } };

/** The host's side of sampling and roots: fixed answers, so both connections see the same. */
function answerServerRequests(client: Client): void {
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({
    role: "assistant",
    content: { type: "text", text: "sampled by the host" },
    model: "scripted",
    stopReason: "endTurn",
  }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({
    roots: [{ uri: "file:///workspace", name: "workspace" }],
  }));
}

/** What a host sees of a server apart from tool calls, in a comparable form. */
async function surface(client: Client) {
  const prompts = await client.listPrompts();
  const resources = await client.listResources();
  const templates = await client.listResourceTemplates();
  const [firstResource] = resources.resources;
  return {
    serverInfo: client.getServerVersion(),
    instructions: client.getInstructions(),
    prompts,
    simplePrompt: await client.getPrompt({ name: "simple-prompt" }),
    argsPrompt: await client.getPrompt({ name: "args-prompt", arguments: { city: "Paris" } }),
    resources,
    templates,
    read: firstResource ? await client.readResource({ uri: firstResource.uri }) : undefined,
    completion: await client.complete({
      ref: { type: "ref/prompt", name: "completable-prompt" },
      argument: { name: "department", value: "E" },
    }),
    echo: await client.callTool({ name: "echo", arguments: { message: "hello" } }),
    sum: await client.callTool({ name: "get-sum", arguments: { a: 2, b: 3 } }),
    sampled: await client.callTool({
      name: "trigger-sampling-request",
      arguments: { prompt: "hi", maxTokens: 5 },
    }),
  };
}

describe("governor proxy in front of @modelcontextprotocol/server-everything", () => {
  it("passes prompts, resources, templates, completions, sampling and results through unchanged", async () => {
    const direct = await startDirect(EVERYTHING, HOST_CAPABILITIES);
    answerServerRequests(direct);
    const expected = await surface(direct);
    const directCaps = direct.getServerCapabilities();
    await direct.close();

    const host = await startHost([], EVERYTHING, HOST_CAPABILITIES);
    answerServerRequests(host.client);
    try {
      const seen = await surface(host.client);
      expect(seen).toEqual(expected);
      expect(textOf(seen.sampled)).toContain("sampled by the host");
      const caps = host.client.getServerCapabilities();
      const { tasks: _tasks, ...withoutTasks } = directCaps ?? {};
      expect(caps).toEqual({
        ...withoutTasks,
        logging: {},
        tools: { ...directCaps?.tools, listChanged: true },
      });
    } finally {
      await host.close();
    }
  });

  it("forwards a tool call's progress to the host under the host's token, before the answer", async () => {
    const host = await startHost([], EVERYTHING, HOST_CAPABILITIES);
    try {
      // What reaches the host on the wire, in order (the SDK's own callback can miss a progress
      // notification that arrives in the same read as the answer).
      const wire: JSONRPCMessage[] = [];
      const onmessage = host.transport.onmessage;
      host.transport.onmessage = (message: JSONRPCMessage) => {
        wire.push(message);
        onmessage?.(message);
      };
      const progress: Progress[] = [];
      const result = await host.client.callTool(
        { name: "trigger-long-running-operation", arguments: { duration: 0.3, steps: 3 } },
        undefined,
        { onprogress: (p) => progress.push(p) },
      );
      expect(result.isError).toBeFalsy();
      const notified = wire.filter(
        (m) => "method" in m && m.method === "notifications/progress",
      ) as unknown as { params: { progress: number; total: number; progressToken: unknown } }[];
      expect(notified.map((m) => m.params.progress)).toEqual([1, 2, 3]);
      expect(notified.every((m) => m.params.total === 3)).toBe(true);
      const answerAt = wire.findIndex((m) => "result" in m && "content" in (m.result as object));
      expect(answerAt).toBeGreaterThan(wire.indexOf(notified[2] as never));
      // The host's token: the SDK numbers it after its own request id.
      const tokens = new Set(notified.map((m) => m.params.progressToken));
      expect(tokens.size).toBe(1);
      expect(progress.length).toBeGreaterThanOrEqual(2);
    } finally {
      await host.close();
    }
  });
});

describe("governor proxy in front of @modelcontextprotocol/server-filesystem", () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "governor-proxy-fs-"));
    writeFileSync(join(dir, "hello.txt"), "hello from the file");
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const filesystem = () => ({
    command: process.execPath,
    args: [join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), dir],
  });

  it("reads a file as a direct connection does; the model reads its own path back, nothing more", async () => {
    const direct = await startDirect(filesystem());
    const expected = await direct.callTool({
      name: "read_text_file",
      arguments: { path: join(dir, "hello.txt") },
    });
    const directMissing = await direct.callTool({
      name: "read_text_file",
      arguments: { path: join(dir, "missing.txt") },
    });
    const directTools = (await direct.listTools()).tools;
    await direct.close();
    // Without Governor, the model reads the server's absolute path.
    expect(textOf(directMissing)).toContain(dir);

    const host = await startHost([], filesystem());
    try {
      expect((await host.client.listTools()).tools).toEqual(directTools);
      const read = await host.client.callTool({
        name: "read_text_file",
        arguments: { path: join(dir, "hello.txt") },
      });
      expect(read).toEqual(expected);
      const missing = await host.client.callTool({
        name: "read_text_file",
        arguments: { path: join(dir, "missing.txt") },
      });
      expect(missing.isError).toBe(true);
      // The path it sent (issue 29: what it needs to correct the call), and no other.
      expect(textOf(missing)).toContain(join(dir, "missing.txt"));
      expect(textOf(missing).replaceAll(join(dir, "missing.txt"), "")).not.toContain(dir);
      expect(textOf(missing)).toMatch(/ENOENT|no such file|not found/i);
    } finally {
      await host.close();
    }
  });
});
