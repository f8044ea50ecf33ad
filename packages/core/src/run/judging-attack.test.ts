// Attacks on a failed attempt's one settle (failed-attempt.ts `resolveFailure`, ledger.ts
// `settle`): the key stays claimed while the attempt is judged, and is settled once, however the
// judging ends. Each test names what broke before its fix. The attacks that need several stores
// (a holder judged past its lease, a judging cut, a retry cut in flight) are in
// test/judging-attack.test.ts, on memory, SQLite and Redis.
import { describe, expect, it } from "vitest";
import type { Failure } from "../judge/failure.ts";
import { createMemoryStore } from "../store/memory-store.ts";
import { createGovernor } from "./governor.ts";

const lost = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const kindOf = (o: { kind: string; reason?: string }) => [o.kind, o.reason];

describe("a failed attempt whose judging throws before it is classified", () => {
  it("a host's toFailure that returns no text: the key is settled, never left pending (was: pending, TypeError)", async () => {
    const store = createMemoryStore();
    const g = createGovernor({ tools: { pay: { effect: "mutating" } } }, { metrics: false, store });
    let key: string | undefined;
    const thrown = await g
      .startRun({ idempotencyScope: "s" })
      .call(
        { tool: "pay", args: { a: 1 }, callId: "x", toFailure: () => ({}) as Failure },
        async (ctx) => {
          key = ctx.idempotencyKey;
          throw lost();
        },
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    // The host's bug surfaces as its own throw; the write it was judging is in doubt.
    expect(thrown).toBeInstanceOf(TypeError);
    expect((await store.entry(key as string))?.state).toBe("uncertain");
    // The same logical call is refused, not sent again.
    let again = 0;
    const retry = await g
      .startRun({ idempotencyScope: "s" })
      .call({ tool: "pay", args: { a: 1 }, callId: "x" }, async () => {
        again += 1;
        return ok("paid");
      });
    expect(kindOf(retry)).toEqual(["stop", "uncertain_mutation"]);
    expect(again).toBe(0);
  });
});
