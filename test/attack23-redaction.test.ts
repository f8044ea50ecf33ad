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

describe("attack23: credentials in the dumps of other languages", () => {
  it("a Ruby or PHP hash (`:password=>\"…\"`, `'password' => '…'`) loses its value", async () => {
    for (const text of [
      'ActiveRecord::RecordInvalid: {:user=>"bob", :password=>"Hunter2xyz"}',
      "PDOException: array ( 'username' => 'bob', 'password' => 'Hunter2xyz' )",
    ]) {
      const seen = await modelReads(text);
      expect(seen, text).not.toContain("Hunter2xyz");
    }
  });

  it("a .NET config entry (<add key=\"DbPassword\" value=\"…\" />) loses its value", async () => {
    const seen = await modelReads(
      'Configuration error in <add key="DbPassword" value="Hunter2xyz" /> near line 12',
    );
    expect(seen).not.toContain("Hunter2xyz");
  });

  it("PostgreSQL's unique-violation DETAIL (Key (api_token)=(…)) loses the token", async () => {
    const seen = await modelReads(
      'duplicate key value violates unique constraint "users_api_token_key" DETAIL: Key (api_token)=(Hunter2xyz123abc) already exists.',
    );
    expect(seen).not.toContain("Hunter2xyz123abc");
  });
});

describe("attack23: locations redaction does not read", () => {
  it("an absolute path glued to a `word:` (ENOENT:/home/…, volume notes:/home/…) is [path]", async () => {
    for (const text of [
      "ENOENT:/home/deploy/.ssh/id_rsa",
      "mount failed: notes:/home/deploy/.ssh/config",
      "src/loader.ts:/home/deploy/app/secrets.json not readable",
    ]) {
      const seen = await modelReads(text);
      expect(seen, text).not.toContain("/home/deploy");
    }
  });

  it("a Kubernetes service host (name.namespace.svc) and a bare cluster host with port are [host]", async () => {
    for (const [text, host] of [
      ["dial tcp notes-db.default.svc:5432: connect: connection refused", "notes-db.default.svc"],
      ["GET http://notes-api:8080/v1/notes failed: 503", "notes-api:8080"],
    ] as const) {
      const seen = await modelReads(text);
      expect(seen, text).not.toContain(host);
    }
  });

  it("an AWS ARN does not hand the model the account id", async () => {
    const seen = await modelReads(
      "AccessDenied: User: arn:aws:iam::123456789012:user/deploy is not authorized to perform: s3:GetObject",
    );
    expect(seen).not.toContain("123456789012");
  });
});
