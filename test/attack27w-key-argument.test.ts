// Attack 27 (writes): a tool whose policy names the argument the idempotency key travels in
// (`idempotency.argument`). The model sees the server's schema, which has that argument, and fills
// it in with a value of its own, a new one each time it writes the call again. Governor overwrites
// that value with its own key, so on the wire two such calls are the same write; yet the index of
// writes in doubt (and the key of a call without callId) read the model's value as part of the
// write's content, and the resend went out as a new write while the first was in doubt.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGovernor, localFailure } from "@governor/core";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { startHost, startInProcessHost, textOf } from "./proxy-support.ts";

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const dir = mkdtempSync(join(tmpdir(), "governor-attack27w-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("a key argument the model fills in itself is not part of the write", () => {
  it("run.call: a resend in the same scope with another model-made key is refused while the first is in doubt", async () => {
    const wire: unknown[] = [];
    const gov = createGovernor(
      { tools: { charge: { effect: "mutating", idempotency: { argument: "idempotency_key" } } } },
      { metrics: false },
    );
    const first = await gov.startRun({ idempotencyScope: "session-1" }).call(
      {
        tool: "charge",
        args: { amount: 5, idempotency_key: "model-made-1" },
        toFailure: () => localFailure("connection_closed"),
      },
      async (ctx) => {
        wire.push(ctx.args);
        throw new Error("connection closed after the request went out");
      },
    );
    expect(first).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    // The model writes the same charge again; its own key is another random string.
    const again = await gov
      .startRun({ idempotencyScope: "session-1" })
      .call(
        { tool: "charge", args: { amount: 5, idempotency_key: "model-made-2" } },
        async (ctx) => {
          wire.push(ctx.args);
          return ok("charged");
        },
      );
    expect(again).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });
    expect(wire).toHaveLength(1);
  });

  it("run.call: two such calls at once in one run: the second is told the first is in progress", async () => {
    const wire: unknown[] = [];
    const gov = createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { argument: "idempotency_key", honorsKeys: true },
          },
        },
      },
      { metrics: false },
    );
    const run = gov.startRun();
    const answers: (() => void)[] = [];
    const execute = async (ctx: { args: unknown }) => {
      wire.push(ctx.args);
      await new Promise<void>((resolve) => answers.push(resolve));
      return ok("charged");
    };
    const a = run.call({ tool: "charge", args: { amount: 5, idempotency_key: "k-a" } }, execute);
    await new Promise((r) => setTimeout(r, 5));
    const b = run.call({ tool: "charge", args: { amount: 5, idempotency_key: "k-b" } }, execute);
    await new Promise((r) => setTimeout(r, 5));
    for (const answer of answers) answer();
    expect(await a).toMatchObject({ kind: "ok" });
    expect(await b).toMatchObject({ kind: "model", reason: "conflict" });
    expect(wire).toHaveLength(1);
  });

  it("run.call: after the first went through, the same write again is a new write, sent (not a replay)", async () => {
    const wire: unknown[] = [];
    const gov = createGovernor(
      { tools: { charge: { effect: "mutating", idempotency: { argument: "idempotency_key" } } } },
      { metrics: false },
    );
    const run = gov.startRun();
    const execute = async (ctx: { args: unknown }) => {
      wire.push(ctx.args);
      return ok(`charge ${wire.length}`);
    };
    const a = await run.call(
      { tool: "charge", args: { amount: 5, idempotency_key: "k-a" } },
      execute,
    );
    const b = await run.call(
      { tool: "charge", args: { amount: 5, idempotency_key: "k-b" } },
      execute,
    );
    expect(a).toMatchObject({ kind: "ok", replayed: false });
    expect(b).toMatchObject({ kind: "ok", replayed: false });
    expect(wire).toHaveLength(2);
  });

  it("governor proxy (stdio, fault server): the write whose answer was lost is not made again under the model's new key", async () => {
    const effects = join(dir, "effects.jsonl");
    const policy = join(dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({
        servers: {
          notes: {
            tools: {
              create_note: { effect: "mutating", idempotency: { argument: "idempotency_key" } },
            },
          },
        },
      }),
    );
    const server = stdioServerParams({
      effectsFile: effects,
      scenario: { create_note: [{ kind: "hang_after_commit", ms: 5_000 }, { kind: "ok" }] },
    });
    const host = await startInProcessHost(
      ["--policy", policy, "--server", "notes", "--timeout", "500ms"],
      { command: server.command, args: server.args ?? [] },
    );
    try {
      const first = await host.client.callTool({
        name: "create_note",
        arguments: { title: "t", body: "b", idempotency_key: "model-made-1" },
      });
      expect(textOf(first)).toContain("may have happened");
      const again = await host.client.callTool({
        name: "create_note",
        arguments: { title: "t", body: "b", idempotency_key: "model-made-2" },
      });
      const created = readEffects(effects).filter((e) => e.tool === "create_note");
      expect({ created: created.length, again: textOf(again) }).toMatchObject({ created: 1 });
      expect(again.isError).toBe(true);
    } finally {
      await host.close();
    }
  }, 60_000);
});

// Attack 29: the same model-made key, seen by what compares calls rather than by the ledger. The
// loop detector, the repeat rule and the call hash in events compare a call with the calls before
// it; a model that fills the key argument anew each time must meet them as one that keeps it.
describe("a key argument the model fills in itself does not make the call another call", () => {
  const policy = (extra: Record<string, unknown> = {}) =>
    createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { argument: "idempotency_key", honorsKeys: true },
            ...extra,
          },
        },
      },
      { metrics: false },
    );
  const SAME = ["k-1", "k-1", "k-1", "k-1", "k-1"];
  const FRESH = ["k-1", "k-2", "k-3", "k-4", "k-5"];

  /** Each call's outcome (kind:reason) until the first stop, and what reached the server. */
  async function callsWith(
    keys: string[],
    extra: Record<string, unknown>,
    answer: (sent: Record<string, unknown>) => unknown,
  ) {
    const run = policy(extra).startRun();
    const wire: Record<string, unknown>[] = [];
    const outcomes: string[] = [];
    for (const key of keys) {
      const outcome = await run.call(
        { tool: "charge", args: { amount: 5, to: "acct_1", idempotency_key: key } },
        async (ctx) => {
          wire.push(ctx.args as Record<string, unknown>);
          return answer(ctx.args as Record<string, unknown>);
        },
      );
      outcomes.push(`${outcome.kind}:${"reason" in outcome ? outcome.reason : ""}`);
      if (outcome.kind === "stop") break;
    }
    return { outcomes, wire, summary: run.end() };
  }

  it("the loop detector: the same write with an unchanged answer, a new key each time, stops as with one key", async () => {
    const answer = () => ok("charged");
    const same = await callsWith(SAME, { loop: { maxIdentical: 2 } }, answer);
    const fresh = await callsWith(FRESH, { loop: { maxIdentical: 2 } }, answer);
    expect(same.outcomes).toEqual(["ok:", "ok:", "stop:loop_detected"]);
    expect(fresh.outcomes).toEqual(same.outcomes);
    expect(fresh.wire).toHaveLength(2);
    // What was sent carries Governor's key, never the model's: a new one per write made.
    for (const sent of fresh.wire) expect(sent.idempotency_key).toMatch(/^gk_/);
  });

  it("the repeat rule: the same refused write, a new key each time, echoed by the server, stops as with one key", async () => {
    // Held before attack 29 too: the server echoes what it was sent, Governor's key, never the
    // model's. Pinned so that leaving the key argument out of the call's arguments keeps it so.
    const answer = (sent: Record<string, unknown>) => ({
      isError: true,
      content: [
        {
          type: "text",
          text: `Error 422: request ${String(sent.idempotency_key)} rejected: amount must be positive`,
        },
      ],
    });
    const same = await callsWith(SAME, {}, answer);
    const fresh = await callsWith(FRESH, {}, answer);
    expect(same.outcomes.at(-1)).toBe("stop:repeated_failure");
    expect(fresh.outcomes).toEqual(same.outcomes);
    expect(fresh.summary.fingerprints).toEqual(same.summary.fingerprints);
  });

  it("events: two calls that differ only in the model's key have one call hash", async () => {
    const hashes: (string | undefined)[] = [];
    const gov = createGovernor(
      {
        tools: {
          charge: { effect: "mutating", idempotency: { argument: "idempotency_key" } },
        },
      },
      {
        metrics: false,
        onEvent: (event) => {
          if (event.type === "call") hashes.push(event.callHash);
        },
      },
    );
    const run = gov.startRun();
    for (const key of ["k-1", "k-2"]) {
      await run.call({ tool: "charge", args: { amount: 5, idempotency_key: key } }, async () =>
        ok("charged"),
      );
    }
    expect(hashes).toHaveLength(2);
    expect(hashes[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(hashes[1]).toBe(hashes[0]);
  });
});

describe("behind the proxy (a child process over stdio): the same write with a new model-made key each time", () => {
  it.each([
    ["one key", ["k-1", "k-1", "k-1", "k-1"]],
    ["a new key each time", ["k-1", "k-2", "k-3", "k-4"]],
  ])(
    "%s: the loop detector stops the third identical set_status, before it is sent",
    async (_what, keys) => {
      const effects = join(dir, `loop-effects-${keys[1]}.jsonl`);
      const policy = join(dir, `loop-policy-${keys[1]}.json`);
      writeFileSync(
        policy,
        JSON.stringify({
          servers: {
            notes: {
              tools: {
                set_status: {
                  effect: "mutating",
                  idempotency: { argument: "idempotency_key" },
                  loop: { maxIdentical: 2 },
                },
              },
            },
          },
        }),
      );
      const server = stdioServerParams({ effectsFile: effects });
      const host = await startHost(["--policy", policy, "--server", "notes"], {
        command: server.command,
        args: server.args ?? [],
      });
      try {
        const texts: string[] = [];
        for (const key of keys) {
          const result = await host.client.callTool({
            name: "set_status",
            arguments: { id: "welcome", status: "archived", idempotency_key: key },
          });
          texts.push(textOf(result));
        }
        expect(texts.slice(0, 2)).toEqual([
          'Status of "welcome" is archived',
          'Status of "welcome" is archived',
        ]);
        expect(texts[2]).toMatch(/repeated without progress/);
        // A loop stop blocks the server's tools for the stop TTL: the fourth is answered by the proxy.
        expect(texts[3]).not.toMatch(/^Status of/);
        const log = host.logs.map((l) => l.data as { event?: string; reason?: string });
        expect(log).toContainEqual(
          expect.objectContaining({ event: "stopped", reason: "loop_detected" }),
        );
      } finally {
        await host.close();
      }
    },
    60_000,
  );
});
