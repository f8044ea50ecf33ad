/**
 * Attack 23: model-facing text after a failure carries no stack trace, path, token, secret,
 * credential or internal id. Each case goes through `createGovernor(...).startRun().call(...)`
 * with an executor that answers an MCP-like `isError` result, and reads the outcome's model text.
 */
import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";

/** What the model reads after one failing call of a read-only tool answering `text`. */
async function modelReads(text: string, args: Record<string, unknown> = { id: "drafts" }): Promise<string> {
  const governor = createGovernor({ tools: { "*": { effect: "read_only" } } }, { metrics: false });
  const run = governor.startRun();
  const outcome = await run.call({ tool: "get_note", args }, async () => ({
    isError: true,
    content: [{ type: "text", text }],
  }));
  expect(outcome.kind).not.toBe("ok");
  if (outcome.kind === "ok") return "";
  const block = outcome.result.content[0];
  return block !== undefined && "text" in block ? String(block.text) : "";
}

describe("attack23: secrets in shapes redaction does not know", () => {
  it("a Discord bot token (id.timestamp.hmac) is redacted", async () => {
    const token = "MTk4NjIyNDgzNDcxOTI1MjQ4.Cl2FMQ.ZnCjm1XVW7vRze4b7Cq4se7kKWs";
    const seen = await modelReads(`Discord login failed: 401 Unauthorized for token ${token}`);
    expect(seen).not.toContain("ZnCjm1XVW7vRze4b7Cq4se7kKWs");
    expect(seen).not.toContain("MTk4NjIyNDgzNDcxOTI1MjQ4");
  });

  it("a Mailgun private key (key-<32 lowercase alphanumerics>) is redacted", async () => {
    const seen = await modelReads("Mailgun rejected key-3ax6xnjp29jd6fds4gc373sgvjxteol0: forbidden");
    expect(seen).not.toContain("3ax6xnjp29jd6fds4gc373sgvjxteol0");
  });

  it("a password named with a full-width colon (password： …) is redacted", async () => {
    const seen = await modelReads("config rejected: password： Hunter2xyz is too weak");
    expect(seen).not.toContain("Hunter2xyz");
  });

  it("a password named in another language (Passwort:, contraseña:, пароль:) is redacted", async () => {
    for (const label of ["Passwort", "contraseña", "пароль", "mot de passe"]) {
      const seen = await modelReads(`Anmeldung fehlgeschlagen, ${label}: Hunter2xyz`);
      expect(seen, label).not.toContain("Hunter2xyz");
    }
  });
});

describe("attack23: stack traces of runtimes redaction does not know", () => {
  it("a Ruby backtrace (app/models/note.rb:12:in `find') is dropped", async () => {
    const seen = await modelReads(
      "NoMethodError: undefined method `body' for nil\napp/models/note.rb:12:in `find'\napp/controllers/notes_controller.rb:8:in `show'",
    );
    expect(seen).not.toContain("note.rb:12");
    expect(seen).not.toContain("notes_controller.rb");
  });

  it("a PHP stack trace (#0 file(17): Class->method()) is dropped", async () => {
    const seen = await modelReads(
      "PHP Fatal error: Uncaught Exception: no note in /var/www/html/src/Notes.php:42\nStack trace:\n#0 /var/www/html/src/Api.php(17): App\\Notes->get('drafts')\n#1 {main}\n  thrown in /var/www/html/src/Notes.php on line 42",
    );
    expect(seen).not.toContain("Stack trace");
    expect(seen).not.toContain("Notes->get");
  });
});
