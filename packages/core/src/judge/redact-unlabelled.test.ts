/**
 * Credentials and locations an error text carries in forms the other rules did not read: a
 * connection string written without its scheme (a Go MySQL DSN, `user:password@host:port`), a
 * JWT-bodied key with two parts after a vendor prefix (Mapbox's `sk.eyJ….<signature>`), vendor
 * keys of hex or upper case alone that the high-entropy rule left (DigitalOcean, Supabase, Pulumi,
 * Square, age) or ended early (Atlassian's `=` and hex tail), Discord bot tokens and Mailgun keys,
 * an AWS ARN's account id, credentials in Ruby and PHP hashes, .NET `<add key value>` entries and
 * PostgreSQL's `Key (…)=(…)` detail, passwords named in other languages or before a full-width
 * colon, a quoted path holding spaces or one glued to `word:`, and Kubernetes and single-label
 * hosts.
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
    ["Jira 401 with ATATT3xFfGF0Tq8Zk2Lm5Rw9Xn4Vb7Pc1Yd6Hs3Jg0Kf8=4E1A9C7B", "4E1A9C7B"], // Discord bot tokens: the base64 of the bot's id, a timestamp, an HMAC, no prefix.
    [
      "Discord gateway closed (4004) for bot NzQ1MjM4OTE2MzA0MjcxMzYw.GhT4kQ.p9Xr2LmVw7Zs4Nq8Kt1Bd6Yc3Hf5Jg0Ae",
      "p9Xr2LmVw7Zs4Nq8Kt1Bd6Yc3Hf5Jg0Ae",
    ],
    // Mailgun private keys: `key-` and 32 lowercase letters and digits.
    [
      "mailgun 401 Forbidden (api key key-8f3k2m9q7w1x5c4v6b0n2z8j3h7g5d1s)",
      "8f3k2m9q7w1x5c4v6b0n2z8j3h7g5d1s",
    ],
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
    "key-value-store-for-the-staging-environment-v2 not found",
    "Module.Submodule.Component.render failed; see Notes.v2.alpha",
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

describe("redact: an AWS ARN", () => {
  it("loses its account id and keeps the resource the model needs to name", () => {
    const out = redact(
      "denied: arn:aws:sts::210987654321:assumed-role/Reader/bot may not call dynamodb:PutItem on arn:aws-us-gov:dynamodb:us-gov-west-1:210987654321:table/notes",
    );
    expect(out).not.toContain("210987654321");
    expect(out).toContain("assumed-role/Reader/bot");
    expect(out).toContain("dynamodb:PutItem");
    expect(out).toContain("table/notes");
  });

  it("an ARN without an account (an S3 bucket's) stays", () => {
    const text = "no read on arn:aws:s3:::notes-archive/2024/report.csv";
    expect(redact(text)).toBe(text);
  });
});

describe("redact: credentials in other languages' dumps and configuration", () => {
  const cases: [string, string][] = [
    // Ruby's hash inspect and PHP's var_export name the value with `=>`.
    ['validation: {:login=>"ann", :api_token=>"Qw8rT2yU6iO0"}', "Qw8rT2yU6iO0"],
    ['{"login"=>"ann", "password"=>"plum-Tree-47"}', "plum-Tree-47"],
    ["array (\n  'host' => 'db',\n  'password' => 'plum-Tree-47',\n)", "plum-Tree-47"],
    // A .NET appSettings entry and a Spring bean property: the name is an attribute.
    ['bad entry <add key="SmtpPassword" value="plum-Tree-47" />', "plum-Tree-47"],
    ["<property name='clientSecret' value='Zx9vB7nM5qW3'/> rejected", "Zx9vB7nM5qW3"],
    // PostgreSQL's unique violation names the columns, then their values.
    [
      'unique violation on "sessions_pkey"\nDETAIL: Key (session_token)=(s3ss-Plum-47x) already exists.',
      "s3ss-Plum-47x",
    ],
    ["DETAIL: Key (tenant_id, api_key)=(7, ak_92hfK3mQ) already exists.", "ak_92hfK3mQ"],
  ];
  it.each(cases)("%s loses %s", (text, secret) => {
    const out = redact(text);
    expect(out).not.toContain(secret);
    expect(out).toContain("[redacted]");
  });

  it.each([
    '{:login=>"ann", :role=>"admin"}',
    '<add key="RequestTimeout" value="30" />',
    "DETAIL: Key (email)=(ann@example.com) already exists.",
    "DETAIL: Key (slug)=(release-notes) already exists.",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});

describe("redact: a password named in another language or before a full-width colon", () => {
  it.each([
    "Anmeldung fehlgeschlagen: Passwort: Plum47tree",
    "Kennwort=Plum47tree abgelehnt",
    "error de acceso, contraseña: Plum47tree",
    "échec : mot de passe : Plum47tree",
    "senha: 'Plum47tree' inválida",
    "ошибка входа, пароль: Plum47tree",
    "ログイン失敗 パスワード：Plum47tree",
    "config: password： Plum47tree is too weak",
    "token＝Plum47tree",
  ])("%s loses the password", (text) => {
    const out = redact(text);
    expect(out).not.toContain("Plum47tree");
    expect(out).toContain("[redacted]");
  });

  it.each([
    "Passwort: required",
    "contraseña: incorrect",
    "Passwortänderung: erfolgreich",
    "Hinweis: bitte erneut versuchen",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});

describe("redact: a path glued to a word and its colon", () => {
  const cases: [string, string][] = [
    ["EACCES:/home/ann/.aws/credentials", "/home/ann"],
    ["volume mount vault:/srv/secrets/vault.hcl failed", "/srv/secrets"],
    ["config.yaml:/etc/notes/db.conf: unreadable", "/etc/notes"],
    ["scp: ann@build-01:/var/backups/notes.tar: No such file", "/var/backups"],
  ];
  it.each(cases)("%s loses %s", (text, path) => {
    const out = redact(text);
    expect(out).not.toContain(path);
    expect(out).toContain("[path]");
  });

  it.each(["default route ::/0/any kept", "see docs.example.com/a/b", "route api:/v1 only"])(
    "%s stays as written",
    (text) => {
      expect(redact(text)).toBe(text);
    },
  );
});

describe("redact: internal hosts of a cluster", () => {
  const cases: [string, string][] = [
    ["dial tcp billing.payments.svc:8443: i/o timeout", "billing.payments"],
    ["GET http://search.prod.svc.cluster.local/api failed", "search.prod"],
    ["lookup vault.service.consul: no such host", "vault.service"],
    ["connect to db01.private:5432 refused", "db01"],
    // A network URL's host of one label: a container's or a service's short name.
    ["POST http://ledger-api:9000/v2/entries returned 502", "ledger-api"],
    ["ws://events/stream closed", "events"],
  ];
  it.each(cases)("%s loses %s", (text, host) => {
    const out = redact(text);
    expect(out).not.toContain(host);
    expect(out).toMatch(/\[(?:host|url)\]/);
  });

  it.each([
    "GET http://localhost:3000/health failed",
    "see https://docs.example.com/errors for details",
    "upload to s3://notes-archive/ failed",
    "WCF fault from Notes.svc: endpoint not found",
    "GET https://api.github.com/repos returned 404",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});

describe("redact: a home-relative path or one from a home variable", () => {
  it.each([
    ["ssh: open ~bob/.ssh/id_rsa: permission denied", "ssh: open [path]: permission denied"],
    ["read ~deploy_user/.aws/credentials failed", "read [path] failed"],
    ["no file ~/.aws/credentials.", "no file [path]."],
    ["cat $HOME/.aws/credentials", "cat [path]"],
    ["missing $HOME/.netrc", "missing [path]"],
    [
      `gcloud: \${HOME}/.config/gcloud/application_default_credentials.json not found`,
      "gcloud: [path] not found",
    ],
    ["open $XDG_CONFIG_HOME/gcloud/credentials.db", "open [path]"],
    ["type %USERPROFILE%\\.aws\\credentials", "type [path]"],
    [
      "at %APPDATA%\\gcloud\\legacy_credentials\\bob@example.com\\adc.json: denied",
      "at [path]: denied",
    ],
    ["%LocalAppData%\\Google\\token.json is stale", "[path] is stale"],
    ["copy %HOMEDRIVE%%HOMEPATH%\\.ssh\\id_ed25519 (done)", "copy [path] (done)"],
    ['{"file":"%USERPROFILE%\\\\.aws\\\\credentials"}', '{"file":"[path]"}'],
    ['{"file":"$HOME/.aws/credentials"}', '{"file":"[path]"}'],
  ])("%s", (text, expected) => {
    expect(redact(text)).toBe(expected);
  });

  // Relative paths, a lone variable, `~` as "about" and `%` as a percentage stay.
  it.each([
    "retry in ~ 5 minutes",
    "took ~5/10 of the budget",
    "set $HOME first",
    "$HOME is unset",
    "echo $HOME/",
    "50% of runs failed, 20%/s slower",
    "100%APPDATA is not a variable",
    "cp src/app/x.ts ./dist/x.ts",
    "$SRC/app/main.ts not found",
    "$1/$2 is the ratio",
    "%PATH%\\bin is a relative entry",
    "a~b/c is a name",
  ])("%s stays as written", (text) => {
    expect(redact(text)).toBe(text);
  });
});
