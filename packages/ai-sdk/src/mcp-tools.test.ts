/**
 * Tools from `@ai-sdk/mcp`'s client (1.x with ai 6, 2.x with ai 7), governed, in the AI SDK's
 * real `generateText` loop with a scripted model, over the testkit's fault server (and its
 * low-level server, which fails with JSON-RPC errors) on stdio and Streamable HTTP.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, type HostError, type PolicyInput } from "@governor/core";
import {
  fixtureSecrets,
  type HttpFaultServer,
  leaksSecrets,
  readEffects,
  type Scenario,
  startHttpServer,
  stdioServerParams,
} from "@governor/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GovernedStop, governTools } from "./govern-tools.ts";
import { governorStopCondition } from "./stop-condition.ts";
import {
  callTool,
  type McpClient,
  SDKS,
  type Sdk,
  type Step,
  say,
  toolOutputs,
  useSdk,
} from "./test-support/sdks.ts";

const SERVER = "notes";

/** Annotations trusted (read-only tools retry, writes are mutating), fast retries. */
const POLICY: PolicyInput = {
  defaults: { retry: { baseDelayMs: 1, maxDelayMs: 5 }, breaker: { threshold: 100 } },
  servers: {
    [SERVER]: {
      trustAnnotations: true,
      tools: {
        // The key reaches an @ai-sdk/mcp tool as an argument (the client sends no request _meta).
        create_note: { idempotency: { argument: "idempotency_key", honorsKeys: true } },
      },
    },
  },
};

type TransportKind = "stdio" | "http";

// Phrasings written for these tests, not taken from any corpus.
const MISSING_SCOPE =
  "The token is missing the `notes:read` scope. Ask a workspace admin to grant it.";
const REFUSAL =
  "Published notes cannot be archived by agents. Contact the editorial team to archive this note.";

interface Server {
  client: McpClient;
  effectsFile: string;
  close(): Promise<void>;
}

const dir = mkdtempSync(join(tmpdir(), "governor-ai-sdk-mcp-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Starts a fault server (or the low-level one) and connects an @ai-sdk/mcp client to it. */
async function connect(
  sdk: Sdk,
  kind: TransportKind,
  options: { lowlevel?: boolean; scenario?: Scenario } = {},
): Promise<Server> {
  const effectsFile = join(dir, `effects-${++files}.jsonl`);
  const server = { effectsFile, ...options };
  let http: HttpFaultServer | undefined;
  let transport: unknown;
  if (kind === "stdio") {
    const params = stdioServerParams(server);
    transport = new sdk.mcpStdio.Experimental_StdioMCPTransport({
      command: params.command,
      args: params.args ?? [],
      stderr: "ignore",
    });
  } else {
    http = await startHttpServer(server);
    transport = { type: "http", url: http.url };
  }
  const client = await sdk.mcp.createMCPClient({ transport, onUncaughtError: () => {} });
  return {
    client,
    effectsFile,
    async close() {
      await client.close().catch(() => {});
      await http?.close();
    },
  };
}

describe.each(SDKS)("$name, @ai-sdk/mcp", (entry) => {
  const sdks = useSdk(entry);

  describe.each(["stdio", "http"] as const)("over %s", (kind) => {
    let faults: Server | undefined;
    let lowlevel: Server | undefined;
    beforeAll(async () => {
      const sdk = sdks.get();
      if (sdk === undefined) return;
      [faults, lowlevel] = await Promise.all([
        connect(sdk, kind, {
          scenario: {
            create_note: [{ kind: "status", status: 503 }],
            // Issue 27.3: person-only failures in words, no status (each call the same answer).
            search_notes: [1, 2, 3].map(() => ({ kind: "error" as const, text: MISSING_SCOPE })),
            set_status: [1, 2, 3].map(() => ({ kind: "error" as const, text: REFUSAL })),
          },
        }),
        connect(sdk, kind, { lowlevel: true }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([faults?.close(), lowlevel?.close()]);
    });

    async function loop(
      sdk: Sdk,
      server: Server | undefined,
      steps: Step[],
      hooks: { onHostError?: (e: HostError) => void; onStop?: (s: GovernedStop) => void } = {},
    ) {
      if (server === undefined) throw new Error("the server did not start");
      const run = createGovernor(POLICY, { metrics: false, random: () => 0.5 }).startRun();
      const model = sdk.scripted(steps);
      const tools = (await server.client.tools()) as Parameters<typeof governTools>[0];
      const result = await sdk.generateText({
        model: model.model,
        tools: governTools(tools, { run, server: SERVER, ...hooks }),
        stopWhen: [sdk.stepCountIs(6), governorStopCondition(run)],
        prompt: "Do the task",
      });
      const prompts = model.prompts();
      return { result, prompts, run, seen: JSON.stringify([prompts, result.steps]) };
    }

    it("a wrong id: the server's error result is counted and reaches the model as one correction", async (ctx) => {
      const sdk = sdks.use(ctx);
      const { prompts, run, result } = await loop(sdk, faults, [
        callTool("get_note", { id: "welcom" }, "c1"),
        callTool("get_note", { id: "welcome" }, "c2"),
        say("Read it."),
      ]);
      expect(prompts).toHaveLength(3);
      const [correction] = toolOutputs(prompts[1]);
      expect(correction).toMatchObject({ type: "error-text" });
      expect((correction as { value: string }).value).toMatch(
        /^get_note: No note with id "welcom"\. Known ids: welcome, release-notes/,
      );
      // The success is the tool's own MCP content, as @ai-sdk/mcp's toModelOutput shapes it.
      expect(toolOutputs(prompts[2])[1]).toMatchObject({
        type: "content",
        value: [{ type: "text", text: expect.stringContaining("# Welcome") }],
      });
      expect(result.text).toBe("Read it.");
      expect(run.summary()).toMatchObject({ calls: 2, actions: { correct_arguments: 1 } });
    });

    it("a 503 result: retried inside the call, the model sees only the success", async (ctx) => {
      const sdk = sdks.use(ctx);
      const { prompts, run, seen } = await loop(sdk, faults, [
        callTool("flaky_fetch", { url: "https://example.com" }),
        say("Fetched."),
      ]);
      expect(prompts).toHaveLength(2);
      expect(JSON.stringify(toolOutputs(prompts[1]))).toContain(
        "200 OK: fetched https://example.com",
      );
      // Not "503" alone: a step's timestamp may hold it (…:03.503Z).
      expect(seen).not.toContain("Service Unavailable");
      expect(run.summary()).toMatchObject({ calls: 1, attempts: 3, retries: 2 });
    });

    it("a write retried after a 503 carries one idempotency key in its argument: one effect", async (ctx) => {
      const sdk = sdks.use(ctx);
      const { run } = await loop(sdk, faults, [
        callTool("create_note", { title: "t", body: "b" }),
        say("Created."),
      ]);
      expect(run.summary()).toMatchObject({ attempts: 2, retries: 1 });
      const effects = readEffects(faults?.effectsFile ?? "");
      expect(effects).toHaveLength(1);
      expect(effects[0]?.key).toMatch(/^gk_[0-9a-f]{32}$/);
    });

    it("a write replayed without a kept result: the model reads that it was done, nothing runs twice", async (ctx) => {
      const sdk = sdks.use(ctx);
      const server = await connect(sdk, kind);
      try {
        const policy: PolicyInput = {
          ...POLICY,
          servers: {
            [SERVER]: {
              trustAnnotations: true,
              tools: {
                create_note: {
                  idempotency: { argument: "idempotency_key", honorsKeys: true, replay: false },
                },
              },
            },
          },
        };
        const governor = createGovernor(policy, { metrics: false, random: () => 0.5 });
        const tools = (await server.client.tools()) as Parameters<typeof governTools>[0];
        // The same job run twice (a worker restarted it): the same tool call id in one scope.
        const job = async () => {
          const run = governor.startRun({ idempotencyScope: "job-7" });
          const model = sdk.scripted([
            callTool("create_note", { title: "t", body: "b" }, "c1"),
            say("Created."),
          ]);
          const result = await sdk.generateText({
            model: model.model,
            tools: governTools(tools, { run, server: SERVER }),
            stopWhen: [sdk.stepCountIs(4), governorStopCondition(run)],
            prompt: "Do the task",
          });
          return { result, prompts: model.prompts() };
        };
        const first = await job();
        const again = await job();
        expect(readEffects(server.effectsFile)).toHaveLength(1);
        expect(first.result.text).toBe("Created.");
        expect(again.result.text).toBe("Created.");
        expect(toolOutputs(again.prompts[1])[0]).toMatchObject({
          type: "content",
          value: [
            {
              type: "text",
              text: "create_note: this call already succeeded before; it was not run again, and its result was not kept.",
            },
          ],
        });
      } finally {
        await server.close();
      }
    });

    it("a permission error: one call, the loop ends after that step", async (ctx) => {
      const sdk = sdks.use(ctx);
      const stops: GovernedStop[] = [];
      const { prompts, run, result } = await loop(
        sdk,
        faults,
        [
          callTool("delete_account", { id: "acct_1" }, "c1"),
          callTool("delete_account", { id: "acct_1" }, "c2"),
        ],
        { onStop: (s) => stops.push(s) },
      );
      expect(prompts).toHaveLength(1);
      expect(run.summary()).toMatchObject({ reason: "forbidden", calls: 1, attempts: 1 });
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(/^delete_account: Permission denied/);
      expect(stops).toEqual([expect.objectContaining({ reason: "forbidden", toolCallId: "c1" })]);
    });

    it.for([
      ["search_notes", { query: "q" }, "forbidden"],
      ["set_status", { id: "welcome", status: "archived" }, "person_required"],
    ] as const)(
      "issue 27.3: %s (a missing scope, a refusal that names who can help) stops at its first call",
      async ([name, args, reason], ctx) => {
        const sdk = sdks.use(ctx);
        const stops: GovernedStop[] = [];
        const { prompts, run } = await loop(
          sdk,
          faults,
          [callTool(name, { ...args }, "c1"), callTool(name, { ...args }, "c2")],
          { onStop: (s) => stops.push(s) },
        );
        expect(prompts).toHaveLength(1);
        expect(run.summary()).toMatchObject({ reason, calls: 1, attempts: 1 });
        expect(stops).toEqual([expect.objectContaining({ reason, toolCallId: "c1" })]);
      },
    );

    it("seed check: the crash's stack, paths and secrets never reach the model", async (ctx) => {
      const sdk = sdks.use(ctx);
      const { seen, result } = await loop(sdk, faults, [
        callTool("crash_with_stack", {}),
        say("ok"),
      ]);
      expect(leaksSecrets(seen)).toBe(false);
      for (const secret of fixtureSecrets()) expect(seen).not.toContain(secret);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(/^crash_with_stack: /);
    });

    it("a JSON-RPC error response goes to the host, tagged protocol; the model gets a fixed text", async (ctx) => {
      const sdk = sdks.use(ctx);
      const hostErrors: HostError[] = [];
      const { prompts, run, seen, result } = await loop(
        sdk,
        lowlevel,
        [callTool("internal", {}), say("ok")],
        { onHostError: (e) => hostErrors.push(e) },
      );
      expect(hostErrors).toEqual([
        expect.objectContaining({
          reason: "protocol_error",
          channel: "protocol",
          failureCode: -32603,
        }),
      ]);
      expect(run.summary().reason).toBe("protocol_error");
      expect(prompts).toHaveLength(1);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(
        /^internal: the call could not be completed\. /,
      );
      expect(seen).not.toContain("notes database");
      expect(leaksSecrets(seen)).toBe(false);
    });
  });

  describe("stdio, reconnect: a new client for a server whose process died (issue 29)", () => {
    /** A client of a new fault-server process on `effectsFile` (its state outlives the process). */
    const spawn = (sdk: Sdk, effectsFile: string) => {
      const params = stdioServerParams({ effectsFile });
      return sdk.mcp.createMCPClient({
        transport: new sdk.mcpStdio.Experimental_StdioMCPTransport({
          command: params.command,
          args: params.args ?? [],
          stderr: "ignore",
        }),
        onUncaughtError: () => {},
      });
    };
    const KEYED: PolicyInput = {
      ...POLICY,
      servers: {
        [SERVER]: {
          trustAnnotations: true,
          tools: {
            write_then_drop: { idempotency: { argument: "idempotency_key", honorsKeys: true } },
          },
        },
      },
    };

    it("a keyed write whose process exits after committing: retried through a new client with the same key, committed once", async (ctx) => {
      const sdk = sdks.use(ctx);
      const effectsFile = join(dir, `effects-${++files}.jsonl`);
      const clients = [await spawn(sdk, effectsFile)];
      try {
        const run = createGovernor(KEYED, { metrics: false, random: () => 0.5 }).startRun();
        const model = sdk.scripted([
          callTool("write_then_drop", { title: "report" }, "c1"),
          say("done"),
        ]);
        const tools = (await clients[0]?.tools()) as Parameters<typeof governTools>[0];
        const hostErrors: HostError[] = [];
        const result = await sdk.generateText({
          model: model.model,
          tools: governTools(tools, {
            run,
            server: SERVER,
            onHostError: (e) => hostErrors.push(e),
            reconnect: async () => {
              await clients
                .at(-1)
                ?.close()
                .catch(() => {});
              const client = await spawn(sdk, effectsFile);
              clients.push(client);
              return client.tools();
            },
          }),
          stopWhen: [sdk.stepCountIs(4), governorStopCondition(run)],
          prompt: "Write the report",
        });
        expect(hostErrors).toEqual([]);
        expect(clients).toHaveLength(2);
        // The new process found the key the first one committed: answered, not written again.
        expect(JSON.stringify(result.steps[0]?.toolResults[0]?.output)).toMatch(
          /Wrote \\"report\\" \(write 1\) \(replayed\)/,
        );
        const effects = readEffects(effectsFile);
        expect(effects).toHaveLength(1);
        expect(effects[0]?.key).toMatch(/^gk_/);
        expect(run.summary()).toMatchObject({ retries: 1, reason: "completed" });
        expect(result.text).toBe("done");
      } finally {
        await Promise.all(clients.map((c) => c.close().catch(() => {})));
      }
    });

    it("without reconnect the same write goes to the host as session_expired, committed once", async (ctx) => {
      const sdk = sdks.use(ctx);
      const effectsFile = join(dir, `effects-${++files}.jsonl`);
      const client = await spawn(sdk, effectsFile);
      try {
        const run = createGovernor(KEYED, { metrics: false, random: () => 0.5 }).startRun();
        const model = sdk.scripted([callTool("write_then_drop", { title: "report" }, "c1")]);
        const tools = (await client.tools()) as Parameters<typeof governTools>[0];
        const hostErrors: HostError[] = [];
        await sdk.generateText({
          model: model.model,
          tools: governTools(tools, {
            run,
            server: SERVER,
            onHostError: (e) => hostErrors.push(e),
          }),
          stopWhen: [sdk.stepCountIs(4), governorStopCondition(run)],
          prompt: "Write the report",
        });
        expect(hostErrors).toEqual([expect.objectContaining({ reason: "session_expired" })]);
        expect(readEffects(effectsFile)).toHaveLength(1);
      } finally {
        await client.close().catch(() => {});
      }
    });
  });

  describe("stdio, a server that exits mid-call (one server each, started together)", () => {
    let exiting: Server | undefined;
    let dropping: Server | undefined;
    beforeAll(async () => {
      const sdk = sdks.get();
      if (sdk === undefined) return;
      [exiting, dropping] = await Promise.all([
        connect(sdk, "stdio"),
        connect(sdk, "stdio", { scenario: { append_log: [{ kind: "drop_after_commit" }] } }),
      ]);
    });
    afterAll(async () => {
      await Promise.all([exiting?.close(), dropping?.close()]);
    });

    it("the server exits during a read-only call: retried (its annotations are trusted), then the closed client goes to the host", async (ctx) => {
      const sdk = sdks.use(ctx);
      const server = exiting;
      if (server === undefined) throw new Error("the server did not start");
      const hostErrors: HostError[] = [];
      const run = createGovernor(POLICY, { metrics: false, random: () => 0.5 }).startRun();
      const model = sdk.scripted([callTool("exit_now", {}), say("ok")]);
      const tools = (await server.client.tools()) as Parameters<typeof governTools>[0];
      const result = await sdk.generateText({
        model: model.model,
        tools: governTools(tools, {
          run,
          server: SERVER,
          onHostError: (e) => hostErrors.push(e),
        }),
        stopWhen: [sdk.stepCountIs(6), governorStopCondition(run)],
        prompt: "Exit",
      });
      // "Connection closed" is the client's own (local), so a read-only call is retried; the
      // retry finds the client closed: a session the host must replace, not a text for the model.
      expect(run.summary()).toMatchObject({ attempts: 2, retries: 1, reason: "session_expired" });
      expect(hostErrors).toEqual([
        expect.objectContaining({ reason: "session_expired", channel: "local" }),
      ]);
      expect(model.prompts()).toHaveLength(1);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(
        /^exit_now: the call could not be completed\. /,
      );
    });

    it("a write whose answer is lost (the server exits after committing) stops with its key, written once", async (ctx) => {
      const sdk = sdks.use(ctx);
      const server = dropping;
      if (server === undefined) throw new Error("the server did not start");
      const stops: GovernedStop[] = [];
      const run = createGovernor(POLICY, { metrics: false, random: () => 0.5 }).startRun();
      const model = sdk.scripted([
        callTool("append_log", { line: "paid invoice 7" }, "c1"),
        callTool("append_log", { line: "paid invoice 7" }, "c2"),
      ]);
      const tools = (await server.client.tools()) as Parameters<typeof governTools>[0];
      const result = await sdk.generateText({
        model: model.model,
        tools: governTools(tools, { run, server: SERVER, onStop: (s) => stops.push(s) }),
        stopWhen: [sdk.stepCountIs(6), governorStopCondition(run)],
        prompt: "Log the payment",
      });
      expect(readEffects(server.effectsFile)).toHaveLength(1);
      expect(model.prompts()).toHaveLength(1);
      expect(run.summary()).toMatchObject({ reason: "uncertain_mutation", attempts: 1 });
      expect(stops).toEqual([
        expect.objectContaining({
          tool: "append_log",
          reason: "uncertain_mutation",
          idempotencyKey: expect.stringMatching(/^gk_[0-9a-f]{32}$/),
        }),
      ]);
      expect(result.steps[0]?.toolResults[0]?.output).toMatch(/^append_log: /);
    });
  });
});
