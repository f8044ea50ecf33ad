/**
 * governMcpServer in the Agents SDK's own Runner, for what issue 29 found: a stdio server process
 * that dies under a keyed write (the write recovers through `reconnect`), and identical calls of
 * one turn (each its own logical call, its own key and its own reason).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, type PolicyInput } from "@governor/core";
import {
  type GovernMcpServerOptions,
  governMcpServer,
  governorStopOf,
  hostErrorOf,
} from "@governor/openai-agents";
import { readEffects, type Scenario } from "@governor/testkit";
import { Agent, type MCPServerStdio } from "@openai/agents";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  FAST_RETRIES,
  type ModelView,
  ReactiveModel,
  rejectionOf,
  runTask,
  SDK_UNSUPPORTED,
  SKIP_REASON,
  type Step,
  stdioFaultServer,
  testRunner,
} from "./openai-agents-support.ts";

const SERVER = "notes";

const POLICY: PolicyInput = {
  ...FAST_RETRIES,
  servers: {
    [SERVER]: {
      trustAnnotations: true,
      tools: {
        write_then_drop: { idempotency: { honorsKeys: true } },
        create_note: { idempotency: { honorsKeys: true } },
      },
    },
  },
};

let dir: string;
let files = 0;
const open: MCPServerStdio[] = [];

/** The testkit's fault server as a child process, through the Agents SDK's own MCPServerStdio. */
async function faultServer(scenario?: Scenario) {
  const effectsFile = join(dir, `effects-${++files}.jsonl`);
  const server = await stdioFaultServer(SERVER, open, {
    effectsFile,
    ...(scenario !== undefined && { scenario }),
  });
  return { server, effects: () => readEffects(effectsFile) };
}

async function runAgent(
  server: MCPServerStdio,
  react: (v: ModelView) => Step,
  options: Partial<GovernMcpServerOptions> = {},
) {
  const governor = createGovernor(POLICY, { metrics: false });
  const run = governor.startRun();
  const mcpServers = [governMcpServer(server, { governor, run, ...options })];
  return { run, ...(await runTask({ mcpServers }, react)) };
}

describe.skipIf(SDK_UNSUPPORTED)(
  `governMcpServer: issue 29 in the Agents SDK's Runner (${SKIP_REASON})`,
  () => {
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "governor-openai-agents-recover-"));
    });
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    const writeOnce = (v: ModelView): Step =>
      v.turn === 1
        ? { calls: [{ name: "write_then_drop", args: { title: "report" } }] }
        : { say: `done: ${v.last[0]?.text}` };

    it("the server process dies under a keyed write: reconnect starts a new one, the retry with the same key commits once", async () => {
      const { server, effects } = await faultServer();
      const { model, run, output, error } = await runAgent(server, writeOnce, { reconnect: true });
      expect(error).toBeUndefined();
      // The first process exited after committing (its answer lost); a new one, started by the
      // reconnect, found the key committed: the write is answered, not redone.
      expect(model.texts()).toEqual([
        expect.stringMatching(/^Wrote "report" \(write 1\) \(replayed\)/),
      ]);
      expect(output).toMatch(/^done: Wrote "report"/);
      const written = effects();
      expect(written).toHaveLength(1);
      expect(written[0]?.key).toMatch(/^gk_/);
      expect(run.summary().retries).toBe(1);
    });

    it("without reconnect the same write ends run() with the HostError (session_expired), committed once", async () => {
      const { server, effects } = await faultServer();
      const { model, error } = await runAgent(server, writeOnce);
      expect(model.views).toHaveLength(1);
      const host = hostErrorOf(error);
      expect(host?.reason).toBe("session_expired");
      expect(governorStopOf(error)).toBeUndefined();
      expect(effects()).toHaveLength(1);
    });

    it("with reconnect, an unkeyed write whose answer was lost with the process is not sent again: uncertain_mutation, committed once", async () => {
      const { server, effects } = await faultServer({
        append_log: [{ kind: "drop_after_commit" }],
      });
      const { model, error } = await runAgent(
        server,
        () => ({ calls: [{ name: "append_log", args: { line: "deploy 1.4.2" } }] }),
        { reconnect: true },
      );
      expect(model.views).toHaveLength(1);
      const stop = governorStopOf(error);
      expect(stop?.reason).toBe("uncertain_mutation");
      expect(stop?.idempotencyKey).toMatch(/^gk_/);
      expect(effects()).toHaveLength(1);
    });

    it("a read whose server process exits mid-call is read again from a new process", async () => {
      const { server } = await faultServer({ get_note: [{ kind: "exit" }] });
      const { model, output, error } = await runAgent(
        server,
        (v) =>
          v.turn === 1
            ? { calls: [{ name: "get_note", args: { id: "welcome" } }] }
            : v.turn === 2
              ? { calls: [{ name: "get_note", args: { id: "release-notes" } }] }
              : { say: "read both" },
        { reconnect: true },
      );
      expect(error).toBeUndefined();
      expect(output).toBe("read both");
      expect(model.texts()).toEqual([
        expect.stringMatching(/Welcome to the notes service/),
        expect.stringMatching(/release/i),
      ]);
    });

    it("the host's abort after a sibling's stop ends run() at once when the run has the host's signal", async () => {
      const { server } = await faultServer();
      const controller = new AbortController();
      const governor = createGovernor(POLICY, { metrics: false });
      const run = governor.startRun({ signal: controller.signal });
      const model = new ReactiveModel(() => ({
        calls: [
          { name: "delete_account", args: { id: "acct_1" } },
          { name: "slow", args: { ms: 6_000 } },
        ],
      }));
      const agent = new Agent({
        name: "notes",
        instructions: "Use the tools.",
        model,
        mcpServers: [governMcpServer(server, { governor, run })],
      });
      const abort = setTimeout(() => controller.abort(new Error("host gave up")), 1_000);
      const started = Date.now();
      const error = await rejectionOf(
        testRunner().run(agent, "Do the task.", { maxTurns: 3, signal: controller.signal }),
      );
      const took = Date.now() - started;
      clearTimeout(abort);
      expect(governorStopOf(error)?.reason).toBe("forbidden");
      // The abort came at 1 s (late enough for the 403 to come first on a loaded machine); the
      // slow call would have answered at 6 s.
      expect(took).toBeLessThan(4_500);
    });

    it.each([
      ["the host's abort", { abortAtMs: 500 }],
      ["the run's deadline", { wallTimeMs: 1_000 }],
    ] as const)(
      "a reconnect that hangs while the tools are listed holds run() no longer than %s, not reconnectTimeoutMs",
      async (_what, bound) => {
        const { server } = await faultServer();
        // The server is gone before the run starts: the first tool listing finds it so.
        await server.close();
        const controller = new AbortController();
        const governor = createGovernor(
          "wallTimeMs" in bound ? { ...POLICY, budgets: { wallTimeMs: bound.wallTimeMs } } : POLICY,
          { metrics: false },
        );
        const run = governor.startRun({ signal: controller.signal });
        const agent = new Agent({
          name: "notes",
          instructions: "Use the tools.",
          model: new ReactiveModel(() => ({ say: "done" })),
          mcpServers: [
            governMcpServer(server, {
              governor,
              run,
              // A way back that never comes (a connect() that takes no signal and hangs).
              reconnect: () => new Promise<void>(() => {}),
              reconnectTimeoutMs: 20_000,
            }),
          ],
        });
        const abort =
          "abortAtMs" in bound
            ? setTimeout(() => controller.abort(new Error("host gave up")), bound.abortAtMs)
            : undefined;
        const started = Date.now();
        const error = await rejectionOf(
          testRunner().run(agent, "Do the task.", { maxTurns: 3, signal: controller.signal }),
        );
        const took = Date.now() - started;
        clearTimeout(abort);
        expect(error).toBeDefined();
        expect(took).toBeLessThan(6_000);
      },
    );

    it("an unkeyed write told to correct itself, sent again identical in the next turn, is refused: the first may have written", async () => {
      // The text asks for a correction but does not prove nothing was written: the identical
      // write is the same logical call in doubt, not a new one with a key of its own.
      const { server, effects } = await faultServer({
        append_log: [{ kind: "error", text: "Invalid date format: expected YYYY-MM-DD" }],
      });
      const call = { name: "append_log", args: { line: "deploy 1.4.2" } };
      const { model, error } = await runAgent(server, (v) =>
        v.turn <= 2 ? { calls: [call] } : { say: "done" },
      );
      expect(model.texts()[0]).toMatch(/Invalid date format/);
      expect(governorStopOf(error)?.reason).toBe("uncertain_mutation");
      expect(effects()).toHaveLength(0);
    });

    it("two identical writes in one turn are two logical calls: each is sent with its own key and gets its own reason", async () => {
      // A definite refusal (a structured 409), then a success: not "an earlier attempt may have taken effect".
      const { server, effects } = await faultServer({
        create_note: [{ kind: "status", status: 409 }],
      });
      const call = { name: "create_note", args: { title: "deploy", body: "1.4.2" } };
      const { model, error, output } = await runAgent(server, (v) =>
        v.turn === 1 ? { calls: [call, call] } : { say: "done" },
      );
      expect(error).toBeUndefined();
      expect(output).toBe("done");
      const texts = model.texts().sort();
      expect(texts).toEqual([
        expect.stringMatching(/^Created note "deploy" with id note-1$/),
        expect.stringMatching(/^create_note: 409/),
      ]);
      const written = effects();
      expect(written).toHaveLength(1);
      expect(written[0]?.key).toMatch(/^gk_/);
    });
  },
);
