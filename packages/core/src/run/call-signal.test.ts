import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { createGovernor } from "./governor.ts";

/**
 * A call's own signal (`ToolCall.signal`): its one abort listener is there while the call is out
 * and gone by the time the caller's continuation runs, however the call ended. The call's promise
 * is its steps' own (no async frame), so the listener leaves in a reaction beside the caller's.
 */

const ok = { content: [{ type: "text", text: "ok" }] };
const gov = () =>
  createGovernor({ tools: { t: { effect: "read_only" } } }, { metrics: false, random: () => 0.5 });
const listeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

describe("a call's own signal", () => {
  it("has one listener while the call is out, none once the caller's continuation runs", async () => {
    const ac = new AbortController();
    const run = gov().startRun();
    let during = -1;
    const outcome = run.call({ tool: "t", signal: ac.signal }, async () => {
      during = listeners(ac.signal);
      return ok;
    });
    // The caller's own reaction, chained at once: the listener must be gone when it runs.
    const seen = await outcome.then((o) => ({ kind: o.kind, after: listeners(ac.signal) }));
    expect(during).toBe(1);
    expect(seen).toEqual({ kind: "ok", after: 0 });
  });

  it("leaves no listener after a failure for the model, a host error, or a call refused at once", async () => {
    const ac = new AbortController();
    const run = gov().startRun();
    const after = (o: { kind: string }) => ({ kind: o.kind, after: listeners(ac.signal) });
    const model = await run
      .call({ tool: "t", signal: ac.signal }, async () => ({
        content: [{ type: "text", text: "Invalid argument: id must be a string" }],
        isError: true,
      }))
      .then(after);
    expect(model).toEqual({ kind: "model", after: 0 });
    // A JSON-RPC protocol error is the host's: the call's promise rejects.
    const thrown = await run
      .call({ tool: "t", signal: ac.signal }, async () => {
        throw Object.assign(new Error("Invalid params"), { code: -32602 });
      })
      .then(after, (error: unknown) => ({
        kind: (error as { code?: string }).code ?? "thrown",
        after: listeners(ac.signal),
      }));
    expect(thrown).toEqual({ kind: "host_error", after: 0 });
    run.end();
    const refused = await run.call({ tool: "t", signal: ac.signal }, async () => ok).then(after);
    expect(refused).toEqual({ kind: "stop", after: 0 });
  });

  it("aborted mid-call: the run stops aborted, the attempt is cut with the signal's reason", async () => {
    const ac = new AbortController();
    const run = gov().startRun();
    const told: unknown[] = [];
    const pending = run.call({ tool: "t", signal: ac.signal }, (ctx) => {
      ctx.onAbort((reason) => told.push(reason));
      return new Promise<never>(() => {});
    });
    const reason = new Error("the host cancelled");
    setTimeout(() => ac.abort(reason), 5);
    expect(await pending).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(told).toEqual([reason]);
    expect(run.ended).toBe(true);
    expect(listeners(ac.signal)).toBe(0);
  });

  it("already aborted: the call is not made and holds no listener", async () => {
    const ac = new AbortController();
    ac.abort();
    const run = gov().startRun();
    let made = false;
    const outcome = await run.call({ tool: "t", signal: ac.signal }, async () => {
      made = true;
      return ok;
    });
    expect(outcome).toMatchObject({ kind: "stop", reason: "aborted" });
    expect(made).toBe(false);
    expect(listeners(ac.signal)).toBe(0);
  });
});
