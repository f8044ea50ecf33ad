// Issue 29: what the model needs to correct a path is not hidden from it: the path it sent itself
// (in an ENOENT text) and the directories a filesystem server lists as allowed. What it did not
// send, a secret-shaped token it sent, and a value the policy marks sensitive stay redacted.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { redact } from "./redact.ts";
import { allowedListed, splitKept } from "./redact-keep.ts";

const ENOENT = "ENOENT: no such file or directory, open '/home/ana/notes/missing.txt'";
const DENIED =
  "Access denied - path outside allowed directories: /etc/passwd not in /home/ana/project, /tmp/work";

describe("redact with keepValues", () => {
  it("leaves the model's own path in an ENOENT text as written", () => {
    expect(redact(ENOENT)).toBe("ENOENT: no such file or directory, open '[path]'");
    expect(redact(ENOENT, { keepValues: ["/home/ana/notes/missing.txt"] })).toBe(ENOENT);
  });

  it("leaves the directories a server lists as allowed, given or not", () => {
    expect(redact(DENIED)).toBe(
      "Access denied - path outside allowed directories: [path] not in /home/ana/project, /tmp/work",
    );
    expect(redact(DENIED, { keepValues: ["/etc/passwd"] })).toBe(DENIED);
  });

  it("still hides a path the model did not send, in the same text", () => {
    const text = `${ENOENT} (resolved from /srv/internal/mounts/ana)`;
    expect(redact(text, { keepValues: ["/home/ana/notes/missing.txt"] })).toBe(
      `${ENOENT} (resolved from [path])`,
    );
  });

  it("keeps a value only where it stands alone: a longer path that starts with it is hidden", () => {
    const text = "cannot open /srv/database-internal/keys";
    expect(redact(text, { keepValues: ["/srv/data"] })).toBe("cannot open [path]");
    expect(redact("cannot open /srv/data/x", { keepValues: ["/srv/data"] })).toBe(
      "cannot open [path]",
    );
    expect(redact("cannot open /srv/data.", { keepValues: ["/srv/data"] })).toBe(
      "cannot open /srv/data.",
    );
  });

  it("a secret-shaped token stays redacted even when the model sent it", () => {
    const token = "ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5";
    const path = `/tmp/${token}/notes.txt`;
    const out = redact(`ENOENT: open '${path}'`, { keepValues: [path, token] });
    expect(out).not.toContain(token);
    const key = "sk-live-4f9aQ2xZ7bN1mK8pL3vR6tY0";
    expect(redact(`invalid key ${key}`, { keepValues: [key] })).not.toContain(key);
  });

  it("a value the policy marks sensitive stays redacted even when the model sent it", () => {
    const path = "/home/ana/private/diary.txt";
    const out = redact(`ENOENT: open '${path}'`, { keepValues: [path], sensitiveValues: [path] });
    expect(out).toBe("ENOENT: open '[redacted]'");
  });

  it("a URL with credentials, a private host or a query string is not kept: redacted as ever", () => {
    for (const url of [
      "https://bob:hunter2@api.example.com/v1",
      "http://10.0.0.5/admin",
      "https://api.example.com/v1?token=abc123",
    ]) {
      const text = `GET ${url} failed`;
      expect(redact(text, { keepValues: [url] }), url).toBe(redact(text));
      expect(redact(text, { keepValues: [url] }), url).not.toContain(url);
    }
  });

  it("property: a secret-shaped token the model sent never reaches the output", () => {
    const tokens = fc.oneof(
      fc.stringMatching(/^sk-[A-Za-z0-9]{24,40}$/),
      fc.stringMatching(/^ghp_[A-Za-z0-9]{36}$/),
      fc.stringMatching(/^xoxb-[0-9]{10,12}-[A-Za-z0-9]{20,24}$/),
    );
    fc.assert(
      fc.property(tokens, fc.constantFrom("", "/tmp/", "/home/ana/"), (token, dir) => {
        const value = `${dir}${token}`;
        const out = redact(`ENOENT: no such file, open '${value}' (${token})`, {
          keepValues: [value, token],
        });
        expect(out).not.toContain(token);
      }),
    );
  });
});

describe("splitKept", () => {
  it("cuts a text at the values that stand alone, longest first, never overlapping", () => {
    expect(splitKept("open /a/b and /a/b/c, then /a/bc", ["/a/b", "/a/b/c"])).toEqual([
      { text: "open ", kept: false },
      { text: "/a/b", kept: true },
      { text: " and ", kept: false },
      { text: "/a/b/c", kept: true },
      { text: ", then /a/bc", kept: false },
    ]);
    expect(splitKept("nothing here", ["/a/b"])).toEqual([{ text: "nothing here", kept: false }]);
  });
});

describe("allowedListed", () => {
  it("reads the absolute paths a refusal lists as allowed, and nothing else", () => {
    expect(allowedListed(DENIED)).toEqual(["/home/ana/project", "/tmp/work"]);
    expect(
      allowedListed(
        "Access denied - symlink target outside allowed directories: /x not in /srv/a.",
      ),
    ).toEqual(["/srv/a"]);
    expect(allowedListed("not in /home/ana/project")).toEqual([]);
    expect(allowedListed("allowed directories: x not in relative/dir")).toEqual([]);
  });
});
