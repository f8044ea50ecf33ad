/**
 * Credentials and locations an error text carries in forms the other rules did not read: a
 * connection string written without its scheme (a Go MySQL DSN, `user:password@host:port`), a
 * JWT-bodied key with two parts after a vendor prefix (Mapbox's `sk.eyJ….<signature>`), vendor
 * keys of hex or upper case alone that the high-entropy rule left (DigitalOcean, Supabase, Pulumi,
 * Square, age) or ended early (Atlassian's `=` and hex tail), and a quoted path holding spaces.
 * Each case names what must not survive; the near misses are texts that must stay as written.
 */
import { describe, expect, it } from "vitest";
import { redact } from "./redact.ts";

const HEX40 = "9c4e1a7b3f2d8e6c0a5b9d1f7e3c2a4b6d8f0e1c";
const HEX64 = `${HEX40}7a2b4c6d8e0f1a3b5c7d9e0f`;

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
    // Oracle's Easy Connect, user/password@//host:port/service.
    ["ORA-12541: cannot connect app/Tg7mPq2x@//db.acme.example:1521/ORCLPDB1", "Tg7mPq2x"],
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
    "github.com/acme/svc@v1.2.3/internal/db: no such module",
    "see acme/widgets@//docs for details",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});

describe("redact: a credential header as Go prints an http.Header", () => {
  // `map[Authorization:[Bearer …]]`: the `[` was read as the value's start, `Bearer` replaced as
  // the value, and the token after it stayed.
  it.each([
    ["auth failed, header map[Authorization:[Bearer Zr8kW2mQ5vTq] Accept:[*/*]]", "Zr8kW2mQ5vTq"],
    ["req.Header=map[Proxy-Authorization:[Basic dXNlcjpQd0Q5eFE=]]", "dXNlcjpQd0Q5eFE="],
  ])("%s loses %s", (text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain("[token]");
  });

  it("keeps the other headers", () => {
    expect(redact("map[Authorization:[Bearer Zr8kW2mQ5vTq] Accept:[*/*]]")).toBe(
      "map[Authorization:[token] Accept:[*/*]]",
    );
  });
});

describe("redact: vendor keys without a label", () => {
  const cases: [string, string][] = [
    // Mapbox: `sk.` or `pk.`, a base64url JSON body, a dot, the signature.
    [
      "Mapbox rejected sk.eyJ1IjoiYWNtZWRldiIsImEiOiJjbHg5OXF6In0.Kp3Lm9Qx7Rz2Vn5Tb8Wc1Y for /styles",
      "Kp3Lm9Qx7Rz2Vn5Tb8Wc1Y",
    ],
    [`DigitalOcean: Unable to authenticate you (dop_v1_${HEX64})`, HEX64],
    [`supabase: invalid access token sbp_${HEX40}`, HEX40],
    [`error: PULUMI_ACCESS_TOKEN invalid, got pul-${HEX40}`, HEX40],
    ["Square 401 for sq0atp-Zk4Rw8Tq2Xm6Pn0Vb3Lc9Y", "Zk4Rw8Tq2Xm6Pn0Vb3Lc9Y"],
    [
      "age: no identity matched AGE-SECRET-KEY-1QW7R3T9Y5U2I8O4P6A1S3D5F7G9H2J4K6L8Z0X3C5V7B9N2M4Q6W8E0R",
      "QW7R3T9Y5U2I8O4P6A1S3D5F7G9H",
    ],
    // Atlassian API tokens end in `=` and eight hex characters: the tail stayed.
    ["Jira 401 with ATATT3xFfGF0Tq8Zk2Lm5Rw9Xn4Vb7Pc1Yd6Hs3Jg0Kf8=4E1A9C7B", "4E1A9C7B"],
  ];
  it.each(cases)("%s loses %s", (text, secret) => {
    const out = redact(text, { maxLength: 2000 });
    expect(out).not.toContain(secret);
    expect(out).toContain("[token]");
  });

  it.each([
    "field 'key' must be key-value pairs, got key-abc",
    "release-2024-05-01 of sbp_cli failed",
    "eyJ is how base64 JSON starts; see docs.example.com",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});

describe("redact: a quoted path holding spaces", () => {
  // The path was cut at its first space: the rest of it (a user's surname, the folders and the
  // file) reached the model.
  const cases: [string, string][] = [
    [
      "EACCES: permission denied, open '/Users/jdoe/Library/Application Support/Acme/config.json'",
      "Acme/config.json",
    ],
    [
      "ENOENT: no such file or directory, open 'C:\\Users\\Jo Quimby\\Documents\\q3.xlsx'",
      "Quimby",
    ],
    ['spawn "C:\\Program Files\\Acme Tools\\bin\\acme.exe" ENOENT', "acme.exe"],
    ["open '/home/jdoe/my notes/plan b.txt': permission denied", "plan b"],
    ["path '\\\\files01\\team share\\Q3 plan.docx' is locked", "plan.docx"],
  ];
  it.each(cases)("%s loses %s", (text, rest) => {
    const out = redact(text);
    expect(out).not.toContain(rest);
    expect(out).toContain("[path]");
  });

  it.each([
    ['{"error":"/data/in.csv does not exist"}', '{"error":"[path] does not exist"}'],
    ["'/srv/a.txt is newer than /srv/b.txt'", "'[path] is newer than [path]'"],
    ['{"e":"\\"/data/in.csv does not exist\\""}', '{"e":"\\"[path] does not exist\\""}'],
  ])("a sentence after a quoted path stays: %s", (text, out) => {
    expect(redact(text)).toBe(out);
  });

  it("ends at the closing quote, and reads no further than its line", () => {
    expect(redact("open '/home/jdoe/my notes/a.txt' failed: EPERM")).toBe(
      "open '[path]' failed: EPERM",
    );
    expect(redact("open '/home/jdoe/a.txt failed\nretry 'b'")).toBe(
      "open '[path] failed retry 'b'",
    );
    expect(redact('{"e":"open \\"/home/jdoe/my notes/a.txt\\" failed"}')).toBe(
      '{"e":"open \\"[path]\\" failed"}',
    );
  });
});

describe("redact: a path not in quotes whose folder name holds a space", () => {
  // Cut at the space, the rest of the path (a surname, the folders, the file) reached the model.
  const cases: [string, string][] = [
    ["Error: key file C:/Users/Jo Quimby/.ssh/id_rsa not found", "Quimby"],
    [
      "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n\tC:/Users/Jo Quimby/go/src/acme/main.go:9 +0x25",
      "main.go",
    ],
    ["load /Users/jdoe/Library/Application Support/Acme/state.db: locked", "state.db"],
    ["cannot read D:\\Team Files\\budget.xlsx now", "budget.xlsx"],
  ];
  it.each(cases)("%s loses %s", (text, rest) => {
    const out = redact(text);
    expect(out).not.toContain(rest);
    expect(out).toContain("[path]");
  });

  it.each([
    ["cp /srv/in/a.txt Dest/b.txt failed", "cp [path] Dest/b.txt failed"],
    ["mv /srv/in/x out/y failed", "mv [path] out/y failed"],
  ])("a word after a path stays unless it goes on with a folder: %s", (text, out) => {
    expect(redact(text)).toBe(out);
  });
});
