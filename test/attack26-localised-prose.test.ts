/**
 * attack26: a credential told in a sentence in another language. Redaction read "the password is
 * hunter2" and a localised name before a colon (`Passwort: …`), but not the sentence in German,
 * French, Spanish, Portuguese, Italian, Dutch, Polish, Russian, Chinese, Japanese or Korean: "Das
 * Passwort lautet Geheim123" reached the model as written. Through a run with a host executor,
 * governClient over real stdio and `governor proxy`.
 */
import { join } from "node:path";
import { createGovernor } from "@governor/core";
import { governClient, toModelResult } from "@governor/mcp";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, describe, expect, it } from "vitest";
import { ROOT, rawAnswersClient, startRawProxy } from "./proxy-support.ts";

const RAW_SERVER = join(ROOT, "test/fixtures/raw-mcp-server.mjs");

/** Each: the failure text, and the secret in it. */
const TOLD: [string, string][] = [
  ["Anmeldung fehlgeschlagen: Das Passwort lautet Geheim123", "Geheim123"],
  ["Ihr Kennwort ist Sommer2024x, bitte ändern", "Sommer2024x"],
  ["échec : le mot de passe est Secr3tPass99", "Secr3tPass99"],
  ["error: la contraseña es Secr3to123", "Secr3to123"],
  ["falha: a senha é Segr3do123", "Segr3do123"],
  ["errore: la password è Segr3to456", "Segr3to456"],
  ["fout: het wachtwoord is Geh31m789", "Geh31m789"],
  ["błąd: hasło to Tajne2024pl", "Tajne2024pl"],
  ["ошибка: пароль — hunter2xyz", "hunter2xyz"],
  ["登录失败，密码是 hunter2abc", "hunter2abc"],
  ["登录失败，密码为hunter2def", "hunter2def"],
  ["ログイン失敗：パスワードは hunter2ghi です", "hunter2ghi"],
  ["로그인 실패: 비밀번호는 hunter2jkl 입니다", "hunter2jkl"],
];

/** What must stay: a status, not a secret. */
const KEPT: string[] = [
  "Das Passwort ist falsch",
  "le mot de passe est incorrect",
  "la contraseña es obligatoria",
  "密码是必填项",
];

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers) await close().catch(() => undefined);
});

function governor() {
  return createGovernor({ tools: { "*": { effect: "read_only" } } });
}

function textOf(result: unknown): string {
  return JSON.stringify(result);
}

describe("attack26: a credential told in a sentence in another language", () => {
  it("a host executor's error: the model reads none of them", async () => {
    for (const [message, secret] of TOLD) {
      const run = governor().startRun();
      const outcome = await run.call({ tool: "login", args: {} }, async () => {
        throw new Error(message);
      });
      expect(outcome.kind).not.toBe("ok");
      expect(textOf(outcome.kind === "ok" ? outcome.value : outcome.result)).not.toContain(secret);
    }
  });

  it("a status in those languages stays", async () => {
    for (const message of KEPT) {
      const run = governor().startRun();
      const outcome = await run.call({ tool: "login", args: {} }, async () => {
        throw new Error(message);
      });
      expect(outcome.kind).not.toBe("ok");
      if (outcome.kind !== "ok") expect(outcome.result.content[0].text).toContain(message);
    }
  });

  const answers = JSON.stringify(
    TOLD.map(([text]) => ({ result: { isError: true, content: [{ type: "text", text }] } })),
  );

  it("governClient over stdio: the model reads none of them", async () => {
    const client = await rawAnswersClient("attack26-told", answers);
    closers.push(() => client.close());
    for (const [i, [, secret]] of TOLD.entries()) {
      const g = governor();
      const outcome = await governClient(client, { governor: g, server: "raw" }).callTool(
        g.startRun(),
        { name: "write_note", arguments: { n: i } },
      );
      expect(outcome.kind).not.toBe("ok");
      expect(textOf(toModelResult(outcome))).not.toContain(secret);
    }
  }, 30_000);

  it("governor proxy: the host reads none of them", async () => {
    const proxy = await startRawProxy(
      [],
      { command: process.execPath, args: [RAW_SERVER] },
      { env: { RAW_MODE: "answers", RAW_ANSWERS: answers } },
    );
    closers.push(() => proxy.close());
    for (const [i, [, secret]] of TOLD.entries()) {
      proxy.send({
        jsonrpc: "2.0",
        id: i + 1,
        method: "tools/call",
        params: { name: "write_note", arguments: { n: i } },
      });
      const answer = await proxy.answer(i + 1);
      expect((answer.result as CallToolResult).isError).toBe(true);
      expect(textOf(answer.result)).not.toContain(secret);
    }
  }, 60_000);
});
