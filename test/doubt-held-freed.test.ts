// A retry took its write's content entry over while it held it in doubt (doubt.ts `claimDoubt`,
// allowUncertain while `doubtHeld`), even after a person's settle had freed that entry and an
// identical write of another call had claimed it and was in doubt: the retry was sent under its
// own key while the other write (another key: the server cannot deduplicate the two) may have
// happened. Now a key found free, not taken over, drops the call's hold (ledger.ts). Found by an
// attack on "a write is never made twice".
import { createGovernor, createMemoryStore, type GovernorEvent } from "@governor/core";
import { describe, expect, it } from "vitest";

const ok = (t: string) => ({ content: [{ type: "text", text: t }] });
const reset = () => Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });

describe("a retry's hold on its write's content entry ends with its key's doubt", () => {
  it("an identical write in doubt under another call id is not taken over by the retry of a key a person settled failed", async () => {
    const store = createMemoryStore();
    const keys: string[] = [];
    const governor = createGovernor(
      {
        tools: {
          charge: {
            effect: "mutating",
            idempotency: { honorsKeys: true },
            retry: { attempts: 2, baseDelayMs: 1500, maxDelayMs: 1500 },
          },
        },
      },
      {
        metrics: false,
        random: () => 0.999,
        store,
        onEvent: (e: GovernorEvent) => {
          const k = (e as { idempotencyKey?: string }).idempotencyKey;
          if (k !== undefined && !keys.includes(k)) keys.push(k);
        },
      },
    );
    const sent: string[] = [];
    const args = { amount: 100, to: "acct_1" };

    // Worker A: its first attempt's answer is lost (ECONNRESET): a retry with the same key follows
    // after ~1.5 s (the server deduplicates A's key).
    const runA = governor.startRun({ idempotencyScope: "job" });
    let a = 0;
    const outcomeA = runA.call({ tool: "charge", args, callId: "a" }, async () => {
      a += 1;
      sent.push(`A${a}`);
      if (a === 1) throw reset();
      return ok("charged by A");
    });

    // During A's backoff: a person checks A's first attempt, finds no charge under A's key, and
    // settles it failed; then worker B (the model resending the charge under a new call id) sends
    // the identical write, whose answer is lost too: B's write is in doubt.
    await new Promise((r) => setTimeout(r, 100));
    expect(sent).toEqual(["A1"]);
    const keyA = keys[0] as string;
    expect(keyA).toMatch(/^gk_/);
    expect((await store.entry(keyA))?.state).toBe("uncertain");
    await governor.settle(keyA, "failed");

    const runB = governor.startRun({ idempotencyScope: "job" });
    const outcomeB = await runB.call({ tool: "charge", args, callId: "b" }, async () => {
      sent.push("B1");
      throw reset();
    });
    // (B's policy retries too: its retry is the same key, so count only first attempts below.)
    expect(outcomeB).toMatchObject({ kind: "stop", reason: "uncertain_mutation" });

    const a2 = await outcomeA;
    // B's write may have happened (its key is in doubt): A's retry, an identical write under
    // another key, is not sent while it is; A stops and says an identical write is in doubt.
    const afterB = sent.slice(sent.indexOf("B1") + 1).filter((s) => s.startsWith("A"));
    expect(afterB).toEqual([]);
    expect(a2.kind).toBe("stop");
  });
});
