import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createGovernor,
  type GovernorOptions,
  HostError,
  IDEMPOTENCY_META_KEY,
  type PolicyInput,
} from "@governor/core";
import { replayedText } from "@governor/core/judge";
import { governMcpServer, governorStopOf } from "@governor/openai-agents";
import { fixtureSecrets, leaksSecrets, readEffects, type Scenario } from "@governor/testkit";
import { Agent, type MCPServerStdio } from "@openai/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FAST_RETRIES,
  type ModelView,
  ReactiveModel,
  runTask,
  SDK_UNSUPPORTED,
  SKIP_REASON,
  type Step,
  stdioFaultServer,
  testRunner,
} from "./openai-agents-support.ts";

const SERVER = "notes";

/** Retries fast, no shared retry budget or breaker in the way; the fault server's annotations trusted. */
const POLICY: PolicyInput = {
  ...FAST_RETRIES,
  servers: {
    [SERVER]: {
      trustAnnotations: true,
      tools: { create_note: { idempotency: { honorsKeys: true } } },
    },
  },
};

let dir: string;
const open: MCPServerStdio[] = [];
type Fault = Awaited<ReturnType<typeof faultServer>>;
/** Servers started once, in parallel, for the tests that share them. */
let shared: {
  plain: Fault;
  lowlevel: Fault;
  dropAppend: Fault;
  flakyCreate: Fault;
  verifiedAppend: Fault;
};

/** The testkit's fault server as a child process, through the Agents SDK's own MCPServerStdio. */
async function faultServer(
  options: { scenario?: Scenario; lowlevel?: boolean; effects?: boolean } = {},
) {
  const effectsFile = options.effects ? join(dir, `effects-${open.length}.jsonl`) : undefined;
  const server = await stdioFaultServer(
    SERVER,
    open,
    {
      ...(options.scenario !== undefined && { scenario: options.scenario }),
      ...(options.lowlevel !== undefined && { lowlevel: options.lowlevel }),
      ...(effectsFile !== undefined && { effectsFile }),
    },
    { cacheToolsList: true },
  );
  return { server, effects: () => (effectsFile ? readEffects(effectsFile) : []) };
}

async function runAgent(
  server: MCPServerStdio,
  react: (v: ModelView) => Step,
  policy = POLICY,
  options: GovernorOptions = {},
) {
  const governor = createGovernor(policy, { metrics: false, ...options });
  const run = governor.startRun();
  const mcpServers = [governMcpServer(server, { governor, run })];
  return { run, ...(await runTask({ mcpServers }, react)) };
}

const callOnce =
  (name: string, args: Record<string, unknown>) =>
  (v: ModelView): Step =>
    v.turn === 1 ? { calls: [{ name, args }] } : { say: `done: ${v.last[0]?.text}` };

describe.skipIf(SDK_UNSUPPORTED)(`governMcpServer over MCPServerStdio (${SKIP_REASON})`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "governor-openai-agents-"));
    const [plain, lowlevel, dropAppend, flakyCreate, verifiedAppend] = await Promise.all([
      faultServer(),
      faultServer({ lowlevel: true }),
      faultServer({ effects: true, scenario: { append_log: [{ kind: "drop_after_commit" }] } }),
      faultServer({ effects: true, scenario: { create_note: [{ kind: "status", status: 503 }] } }),
      faultServer({ effects: true, scenario: { append_log: [{ kind: "drop_after_commit" }] } }),
    ]);
    shared = { plain, lowlevel, dropAppend, flakyCreate, verifiedAppend };
  }, 90_000);
  afterAll(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it("a wrong id: the model reads Governor's correction and fixes its call", async () => {
    const { server } = shared.plain;
    const { model, output, error } = await runAgent(server, (v) => {
      if (v.turn === 1) return { calls: [{ name: "get_note", args: { id: "drafts" } }] };
      // Governor's text names the tool and the ids that exist.
      if (v.last[0]?.text.startsWith("get_note:") && v.last[0].text.includes("welcome")) {
        return { calls: [{ name: "get_note", args: { id: "welcome" } }] };
      }
      return {
        say: v.last[0]?.text.includes("Welcome to the notes service") ? "read it" : "gave up",
      };
    });
    expect(error).toBeUndefined();
    const [first, second] = model.texts();
    expect(first).toMatch(/^get_note: No note with id/);
    expect(second).toMatch(/Welcome to the notes service/);
    expect(output).toBe("read it");
  });

  it("a 503 is retried inside the call: the model reads only the result", async () => {
    const { server } = shared.plain;
    const { model, run, error } = await runAgent(
      server,
      callOnce("flaky_fetch", { url: "https://example.com" }),
    );
    expect(error).toBeUndefined();
    expect(model.texts()).toEqual([expect.stringMatching(/^200 OK: fetched/)]);
    expect(run.summary().retries).toBe(2);
  });

  it("a permission error ends run() after one call, with the reason for the host", async () => {
    const { server } = shared.plain;
    const { model, run, error } = await runAgent(server, () => ({
      calls: [{ name: "delete_account", args: { id: "acct_1" } }],
    }));
    expect(model.views).toHaveLength(1);
    const stop = governorStopOf(error);
    expect(stop?.reason).toBe("forbidden");
    expect(stop?.server).toBe(SERVER);
    expect(run.summary().attempts).toBe(1);
  });

  it("an uncertain write stops with its key, committed once; the key reached the server in _meta", async () => {
    const { server, effects } = shared.dropAppend;
    const { model, error } = await runAgent(server, () => ({
      calls: [{ name: "append_log", args: { line: "hello" } }],
    }));
    expect(model.views).toHaveLength(1);
    const stop = governorStopOf(error);
    expect(stop?.reason).toBe("uncertain_mutation");
    expect(stop?.idempotencyKey).toMatch(/^gk_/);
    const written = effects();
    expect(written).toHaveLength(1);
    expect(written[0]?.key).toBe(stop?.idempotencyKey);
  });

  it("a lost write the verify step finds done, with no result: the model reads that it was done", async () => {
    const { server, effects } = shared.verifiedAppend;
    const policy: PolicyInput = {
      ...POLICY,
      servers: {
        [SERVER]: { tools: { append_log: { effect: "mutating", idempotency: { verify: true } } } },
      },
    };
    // The write committed and its answer was lost: the verify step finds it, with no result to
    // hand back. The SDK reads `content` of what callTool answers (undefined there threw).
    const verify = { append_log: async () => ({ effect: "present" as const }) };
    const { model, output, error } = await runAgent(
      server,
      callOnce("append_log", { line: "hello" }),
      policy,
      { verify },
    );
    expect(error).toBeUndefined();
    expect(effects()).toHaveLength(1);
    expect(model.texts()).toEqual([replayedText("append_log")]);
    expect(output).toBe(`done: ${replayedText("append_log")}`);
  });

  it("a keyed write is retried with the same key and committed once", async () => {
    const { server, effects } = shared.flakyCreate;
    const { model, error } = await runAgent(
      server,
      callOnce("create_note", { title: "t", body: "b" }),
    );
    expect(error).toBeUndefined();
    expect(model.texts()).toEqual([expect.stringMatching(/note-1/)]);
    const written = effects();
    expect(written).toHaveLength(1);
    expect(written[0]?.key).toMatch(/^gk_/);
    expect(IDEMPOTENCY_META_KEY).toBe("io.governor/idempotency-key");
  });

  it("a JSON-RPC error goes to the host: run() rejects with the HostError, the model reads nothing of it", async () => {
    const { server } = shared.lowlevel;
    const { model, run, error } = await runAgent(server, () => ({
      calls: [{ name: "internal", args: {} }],
    }));
    expect(model.views).toHaveLength(1);
    const host = (error as { error?: unknown }).error;
    expect(host).toBeInstanceOf(HostError);
    expect((host as HostError).channel).toBe("protocol");
    expect((host as HostError).failureCode).toBe(-32603);
    expect(run.summary().reason).toBe("protocol_error");
  });

  it("observe-only: a JSON-RPC error reaches the model as it does without Governor, and run() goes on", async () => {
    // Observe-only enforces nothing: run.call hands back what the client threw. Taken for trouble
    // in Governor, it became a HostError that ended run(), where the SDK alone answers the model.
    const { server } = shared.lowlevel;
    const react = (v: ModelView): Step =>
      v.turn === 1 ? { calls: [{ name: "internal", args: {} }] } : { say: "done" };
    const alone = new ReactiveModel(react);
    await testRunner().run(
      new Agent({
        name: "notes",
        instructions: "Use the tools.",
        model: alone,
        mcpServers: [server],
      }),
      "Do the task.",
      { maxTurns: 6 },
    );
    const observed = await runAgent(server, react, { ...POLICY, observeOnly: true });
    expect(observed.error).toBeUndefined();
    expect(observed.output).toBe("done");
    expect(observed.model.texts()).toEqual(alone.texts());
    expect(observed.run.end().reason).toBe("completed");
  });

  it("seed checks: a crash with a stack, paths and secrets never reaches the model", async () => {
    const { server } = shared.plain;
    const { model, error } = await runAgent(server, (v) =>
      v.turn < 3 ? { calls: [{ name: "crash_with_stack", args: {} }] } : { say: "gave up" },
    );
    const texts = model.views.flatMap((v) => v.results.map((r) => r.text));
    const stop = governorStopOf(error);
    expect(texts.length + (stop ? 1 : 0)).toBeGreaterThan(0);
    for (const text of [...texts, stop?.modelText ?? "", stop?.message ?? ""]) {
      expect(leaksSecrets(text, fixtureSecrets()), text).toBe(false);
    }
  });
});
