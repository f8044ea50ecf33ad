/**
 * Credentials and locations an error text carries in forms the other rules did not read: a
 * connection string written without its scheme (a Go MySQL DSN, `user:password@host:port`).
 * Each case names what must not survive; the near misses are texts that must stay as written.
 */
import { describe, expect, it } from "vitest";
import { redact } from "./redact.ts";

describe("redact: a connection string without its scheme", () => {
  const cases: [string, string][] = [
    // go-sql-driver/mysql's DSN, as an app logs it when opening the pool fails.
    [
      "open pool app:Wq7pLz9Kx2@tcp(db-primary:3306)/orders?parseTime=true: i/o timeout",
      "Wq7pLz9Kx2",
    ],
    ['sql.Open("mysql", "svc:Rt5!mN8q@unix(/var/run/mysqld/mysqld.sock)/app") failed', "Rt5!mN8q"],
    ["dial admin:Hq3vN7xP@db.acme.example:5432 refused", "Hq3vN7xP"],
    // A password holding `@` or `:` is read to the last `@` before the host.
    ["dial admin:p@ss:Hq3vN7xP@db.acme.example:5432 refused", "Hq3vN7xP"],
    ["dial admin:Hq3vN7xP@[2001:db8::5]:5432 refused", "Hq3vN7xP"],
  ];
  it.each(cases)("%s loses %s", (text, secret) => {
    const out = redact(text, { maxLength: 2000 });
    expect(out).not.toContain(secret);
    expect(out).toContain("[redacted]");
  });

  it("keeps the host and port the model may need to name", () => {
    expect(redact("dial admin:Hq3vN7xP@db.acme.example:5432 refused")).toBe(
      "dial [redacted]@db.acme.example:5432 refused",
    );
  });

  it.each([
    "git@github.com:acme/widgets.git: Permission denied (publickey)",
    "expected time as hh:mm, got 12:30@noon",
    "mailto:ops@acme.example is not a valid recipient",
    "port admin:5432 is closed",
    "user admin:read@scope is not a role",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});
