import { describe, expect, it } from "vitest";
import { hostAllowed, parseProxyArgs } from "./command.ts";

describe("parseProxyArgs", () => {
  it("takes the server's command after --, with its own flags untouched", () => {
    const args = parseProxyArgs([
      "--policy",
      "p.json",
      "--window",
      "5m",
      "--stop-ttl",
      "30s",
      "--",
      "npx",
      "-y",
      "server",
      "--policy",
      "theirs",
    ]);
    expect(args).toEqual({
      policy: "p.json",
      host: "127.0.0.1",
      command: { command: "npx", args: ["-y", "server", "--policy", "theirs"] },
      windowMs: 300_000,
      stopTtlMs: 30_000,
    });
  });

  it("takes an upstream URL and a port to listen on, on loopback by default", () => {
    expect(parseProxyArgs(["--listen", "0", "--upstream", "http://127.0.0.1:9/mcp"])).toMatchObject(
      { listen: 0, host: "127.0.0.1", upstream: new URL("http://127.0.0.1:9/mcp") },
    );
  });

  it.each([
    [[], /no server to govern/],
    [["--upstream", "http://x/mcp", "--", "node", "s.js"], /not both/],
    [["--upstream", "ftp://x"], /http: or https:/],
    [["--upstream", "not a url"], /expected an http\(s\) URL/],
    [["--listen", "99999", "--", "s"], /expected a port, 0 to 65535/],
    [["--window", "soon", "--", "s"], /--window "soon": expected a duration such as 500ms/],
    [["--timeout", "0", "--", "s"], /must be more than 0/],
    [["server.js"], /put the server's command after --/],
    [["--bogus", "--", "s"], /bogus/],
  ])("refuses %j with a message that says what is accepted", (argv, message) => {
    expect(() => parseProxyArgs(argv as string[])).toThrow(message);
  });
});

describe("hostAllowed", () => {
  it("answers loopback Host headers only when bound to loopback (DNS rebinding)", () => {
    expect(hostAllowed("127.0.0.1", "127.0.0.1:8931")).toBe(true);
    expect(hostAllowed("127.0.0.1", "localhost:8931")).toBe(true);
    expect(hostAllowed("127.0.0.1", "[::1]:8931")).toBe(true);
    expect(hostAllowed("127.0.0.1", "evil.example:8931")).toBe(false);
    expect(hostAllowed("127.0.0.1", undefined)).toBe(false);
    expect(hostAllowed("0.0.0.0", "anything.example")).toBe(true);
  });
});
