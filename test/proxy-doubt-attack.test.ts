// Attack on the proxy's writes in doubt (docs/proxy.md): the host cancels a write that went out
// and sends the identical call in the same write to stdin. The proxy is a real process on raw
// stdio (the two lines in one chunk), the server the testkit's fault server.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readEffects, stdioServerParams } from "@governor/testkit";
import { afterAll, describe, expect, it } from "vitest";
import { startRawProxy } from "./proxy-support.ts";

const dir = mkdtempSync(join(tmpdir(), "governor-proxy-doubt-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("proxy: cancel then the identical call in one stdin write", () => {
  it("the server creates the note once; the event log names the key a person settles", async () => {
    const effects = join(dir, "effects.jsonl");
    const policy = join(dir, "policy.json");
    writeFileSync(
      policy,
      JSON.stringify({
        defaults: { retry: { baseDelayMs: 1, maxDelayMs: 5 } },
        servers: { notes: { tools: { create_note: { idempotency: { honorsKeys: true } } } } },
      }),
    );
    const server = stdioServerParams({
      effectsFile: effects,
      scenario: { create_note: [{ kind: "hang_after_commit", ms: 3000 }, { kind: "ok" }] },
    });
    const host = await startRawProxy(
      ["--policy", policy, "--server", "notes", "--events", join(dir, "events.jsonl")],
      { command: server.command, args: server.args ?? [] },
    );
    try {
      const call = (id: number) => ({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "create_note", arguments: { title: "t", body: "b" } },
      });
      host.send(call(2));
      // The note is committed; its answer hangs.
      for (let i = 0; i < 200 && readEffects(effects).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(readEffects(effects)).toHaveLength(1);
      host.send(
        { jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 2 } },
        call(3),
      );
      const third = (await host.answer(3)) as { result?: { content?: { text: string }[] } };
      await new Promise((r) => setTimeout(r, 500));
      const created = readEffects(effects).filter((e) => e.tool === "create_note");
      const text = JSON.stringify(third);
      // Either the same key was sent again (the server deduplicates it) or it was refused.
      const keys = new Set(created.map((e) => (e as { key?: string }).key));
      expect({ keys: keys.size, text }).toMatchObject({ keys: 1 });
      expect(text).toContain("was not sent");
      // The person finds the key to settle in the event log (the refused call names none, and
      // stderr says nothing of a cancelled write): the cancelled call's stop names it.
      const [key] = [...keys];
      expect(readFileSync(join(dir, "events.jsonl"), "utf8")).toContain(
        `"idempotencyKey":"${key}"`,
      );
      // So does the host's log (notifications/message): the cancelled call's `stopped` entry.
      expect(host.stdout()).toContain(`"idempotencyKey":"${key}"`);
    } finally {
      host.kill();
    }
  }, 60_000);
});
