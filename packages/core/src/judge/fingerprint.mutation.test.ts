import { describe, expect, it } from "vitest";
import { fingerprint, normalizeText } from "./fingerprint.ts";

// Pins what mutation testing found untested in the fingerprint (issue 8): the input cut, each
// normalization rule's edges (what it takes and what it must leave), and the condition values
// that keep two different failures apart.

const fp = (text: string) => fingerprint({ tool: "t", channel: "tool", text });

describe("normalizeText: bounds", () => {
  it("issue 8 (mutation): reads only the first 4,096 characters of the input", () => {
    // What lies past the cut cannot change the result, however it would normalize.
    expect(normalizeText(`${" ".repeat(4096)}boom`)).toBe("");
    expect(normalizeText(`${" ".repeat(4095)}boom`)).toBe("b");
    const pad = (n: number) => " ".repeat(n);
    expect(fp(`${pad(4096)}order failed`)).toBe(fp(`${pad(4096)}quota reached`));
    expect(fp(`${pad(4090)}order failed`)).not.toBe(fp(`${pad(4090)}quota reached`));
  });

  it("caps the normalized text at 500 characters", () => {
    expect(normalizeText("ab ".repeat(400))).toHaveLength(500);
    expect(normalizeText("ab ".repeat(100))).toBe("ab ".repeat(100).trim());
  });

  it("collapses any run of whitespace to one space and trims", () => {
    expect(normalizeText("a\tb\nc  d")).toBe("a b c d");
    expect(normalizeText("a\u00a0b")).toBe("a b");
    expect(normalizeText("  a b  ")).toBe("a b");
  });
});

describe("normalizeText: rules", () => {
  it.each([
    // The SDK's prefix: leading only, any code, any spacing.
    ["  MCP error 5:   boom", "boom"],
    ["mcp error -32602:x", "x"],
    ["boom MCP error -32602: x", "boom mcp error -<id>: x"],
    ["MCP error -32602 boom", "mcp error -<id> boom"],
    ["MCP error: boom", "mcp error: boom"],
    // Quoted values; JSON keys and condition values after a key stay.
    ['{"a": 1, "b": "x"}', '{"a": <id>, "b": <str>}'],
    ['x "a": 1', "x <str>: <id>"],
    ['"name": "orders"', "<str>: <str>"],
    ['{"code": "not_found"}', '{"code": "not_found"}'],
    ['{"code": "card"}', '{"code": "card"}'],
    // One word of a condition after a colon stays, whatever the key (issue 27.5).
    ['"name": "not_found"', '<str>: "not_found"'],
    // A quoted phrase of error vocabulary is a message, whatever key it follows (issue 27.5).
    ['{"kind": "not found"}', '{"kind": "not found"}'],
    ['{"kind": "our orders"}', '{"kind": <str>}'],
    ['failed: "Rate limit exceeded for 42"', 'failed: "rate limit exceeded for <id>"'],
    // A one-word message that names a condition stays; one that names a thing is a value.
    ['{"message": "Forbidden"}', '{"message": "forbidden"}'],
    ['{"message": "orders"}', '{"message": <str>}'],
    // A numeric code or status after its key names the condition.
    ['{"code": 40301, "status": 403}', '{"code": 40301, "status": 403}'],
    ["errno=1045 id=1045", "errno=1045 id=<v>"],
    ['code: "orders"', "code: <str>"],
    ['code: "not_found"', 'code: "not_found"'],
    ["say ‘hi’ and “there” or `x`", "say <str> and <str> or <str>"],
    ["don't stop, won't go", "don't stop, won't go"],
    ['x"abc" y', 'x"abc" y'],
    [`x "${"a".repeat(200)}" y`, "x <str> y"],
    [`x "${"a".repeat(201)}" y`, `x "${"a".repeat(201)}" y`],
    // URLs and emails.
    ["see https://example.com/a?b=1, then ftp://h/x", "see <url>, then <url>"],
    ["mail a.b+c@ex-ample.co.uk. ok", "mail <email>. ok"],
    ["user@localhost", "user@localhost"],
    // key=value: the key stays; condition keys keep identifier values.
    ["a=1 b=two _c=3 d.e=4 x.y=z", "a=<v> b=<v> _c=<v> d.e=<v> x.y=<v>"],
    [`k="quoted value" j='single v'`, "k=<v> j=<v>"],
    ["a=b,c=d;e=f&g=h)i", "a=<v>,c=<v>;e=<v>&g=<v>)i"],
    ["status=active type=Bad kind=x1", "status=active type=bad kind=<v>"],
    [
      "error=not_found error_code=e_bad errorcode=x err=y reason=z category=io class=a.b",
      "error=not_found error_code=e_bad errorcode=x err=y reason=z category=io class=a.b",
    ],
    [`type=${"a".repeat(40)}`, `type=${"a".repeat(40)}`],
    [`type=${"a".repeat(41)}`, "type=<v>"],
    ["err='bad_thing' kind=`x`", "err='bad_thing' kind=`x`"],
    // UUIDs, dates and times.
    ["id 123e4567-e89b-12d3-a456-426614174000 x", "id <id> x"],
    ["at 2024-01-15 x", "at <time> x"],
    ["at 2024-01-15 10:30 x", "at <time> x"],
    ["at 2024-01-15t10:30:00+02:00 x", "at <time> x"],
    ["at 2024-01-15T10:30:00,5-0700 x", "at <time> x"],
    ["on 5 Jan 2024 ok", "on <time> ok"],
    ["on Tue, 15 January 2024 10:30:00 +0000 ok", "on <time> ok"],
    ["on 15-jan-24 ok", "on <time> ok"],
    ["on January 5th, 2024 ok", "on <time> ok"],
    ["on Jan. 5 2024 ok", "on <time> ok"],
    ["at 10:30 ok", "at <time> ok"],
    ["at 10:30:15.123 pm ok", "at <time> ok"],
    ["at 1:30am ok", "at <time> ok"],
    // Addresses, paths and hosts.
    ["ip 192.168.0.1 ok", "ip <ip> ok"],
    ["ip 0.0.0.0:10", "ip <ip>:<id>"],
    ["v6 fe80::1 and 2001:db8::ff00:42:8329 ok", "v6 <ip> and <ip> ok"],
    ["::", "::"],
    ["path D:/dir/file.txt ok", "path <path> ok"],
    ["path c:\\x ok", "path <path> ok"],
    ["unc \\\\srv\\share ok", "unc <path> ok"],
    ["p ./a/b ../c ~/d /e/f.txt ok", "p <path> <path> <path> <path> ok"],
    ["a/b and x//y", "a/b and x//y"],
    ["/", "/"],
    ["host api.example.com. ok", "host <host>. ok"],
    ["host a.b ok", "host a.b ok"],
    ["file.tar.gz and x.io", "<host> and <host>"],
    ["v1.2.3 and e.g. this", "v<id>.<id> and e.g. this"],
    // Tokens, hex ids, durations and numbers.
    ["token abcdefghij0123456789 ok", "token <id> ok"],
    ["token abcdefghijklmnopqrst ok", "token abcdefghijklmnopqrst ok"],
    ["token 01234567890123456789 ok", "token <id> ok"],
    ["hex deadbee1 ok", "hex <id> ok"],
    ["hex 0xdeadbee1 ok", "hex <id> ok"],
    ["hex abcdef0 ok", "hex <id> ok"],
    ["hex abcdefa ok", "hex abcdefa ok"],
    [
      "took 5ms, 1.5 s, 3sec, 2 minutes, 4h, 7d, 8µs, 9us, 10ns",
      "took <dur>, <dur>, <dur>, <dur>, <dur>, <dur>, <dur>, <dur>, <dur>",
    ],
    ["took 5msx", "took <id>msx"],
    ["5 items cost 1,000.50", "<id> items cost <id>"],
    ["http2 s3 utf8 ab123 a1", "http2 s3 utf8 ab<id> a1"],
    [
      "HTTP 503, status 404, code: 500, error 429, returned 502, responded 503, response 504",
      "http 503, status 404, code: 500, error 429, returned 502, responded 503, response 504",
    ],
    ["got 503", "got <id>"],
    ["status 600", "status <id>"],
    ["status 099", "status <id>"],
  ])("%j → %j", (text, expected) => {
    expect(normalizeText(text)).toBe(expected);
  });
});

describe("fingerprint: conditions stay apart", () => {
  it("condition values tell failures apart; other values do not", () => {
    expect(fp("code=not_found")).not.toBe(fp("code=rate_limited"));
    expect(fp('{"error": "not_found"}')).not.toBe(fp('{"error": "conflict"}'));
    expect(fp("user=alice")).toBe(fp("user=bob"));
    expect(fp("HTTP 503")).not.toBe(fp("HTTP 504"));
    expect(fp("got 503")).toBe(fp("got 504"));
  });

  it("an HTTP status after a protocol version (HTTP/1.1 503) names the condition", () => {
    // The status context is read on the original text, where the version is still `HTTP/1.1`.
    expect(fp("HTTP/1.1 503 Service Unavailable")).not.toBe(fp("HTTP/1.1 429 Service Unavailable"));
  });

  it("status=503 and status=429 are different failures (the doc keeps statuses after `status`)", () => {
    expect(fp("upstream failed: status=503")).not.toBe(fp("upstream failed: status=429"));
  });
});
