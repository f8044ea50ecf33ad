import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import { classify } from "./classify.ts";
import { maskArgumentEchoes } from "./echoes.ts";
import { explainClassification } from "./explain.ts";
import { failureFromResult } from "./failure.ts";

const tool = resolveToolPolicy(loadPolicy({}), "search");
const textFailure = (text: string) =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });

describe("maskArgumentEchoes", () => {
  it("masks a value the arguments hold, quoted, bracketed or long enough, case-insensitively", () => {
    expect(
      maskArgumentEchoes("Pattern 'Unauthorized' matched no files", { q: "unauthorized" }),
    ).toBe("Pattern '…' matched no files");
    expect(maskArgumentEchoes("no index [logs]", { index: "logs" })).toBe("no index […]");
    expect(
      maskArgumentEchoes("permission denied matched nothing", { q: "permission denied" }),
    ).toBe("… matched nothing");
    expect(maskArgumentEchoes("no run with status 503", { filter: { status: 503 } })).toBe(
      "no run with status …",
    );
  });

  it("leaves whole words of the text alone: short bare values, parts of a longer word, other values", () => {
    expect(maskArgumentEchoes("file not found", { kind: "file" })).toBe("file not found");
    expect(maskArgumentEchoes("TimeoutError: upstream", { q: "timeout" })).toBe(
      "TimeoutError: upstream",
    );
    expect(maskArgumentEchoes("503 Service Unavailable", { q: "orders" })).toBe(
      "503 Service Unavailable",
    );
    expect(maskArgumentEchoes("503 Service Unavailable", { limit: 50 })).toBe(
      "503 Service Unavailable",
    );
  });

  it("reads a bounded part of the arguments however many values they hold or share", () => {
    // Each value read counts: wide objects, long arrays and shared references (an object graph
    // an in-process host passes) are read up to the bound, not walked whole.
    let reads = 0;
    const counted = (n: number) =>
      Object.defineProperties(
        {},
        Object.fromEntries(
          Array.from({ length: n }, (_, i) => [
            `k${i}`,
            {
              enumerable: true,
              get: () => {
                reads++;
                return i % 2 === 0 ? 7 : { deep: 7 };
              },
            },
          ]),
        ),
      );
    maskArgumentEchoes("no match", counted(50_000));
    expect(reads).toBeLessThanOrEqual(1_000);
    reads = 0;
    maskArgumentEchoes("no match", { list: Array.from({ length: 50_000 }, () => counted(1)) });
    expect(reads).toBeLessThanOrEqual(1_000);
    reads = 0;
    let graph: unknown = counted(10);
    for (let d = 0; d < 6; d++)
      graph = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`, graph]));
    maskArgumentEchoes("no match", { graph });
    expect(reads).toBeLessThanOrEqual(1_000);
  });

  it("masks the longer of two values that overlap first", () => {
    expect(
      maskArgumentEchoes('no match for "rate limit exceeded"', {
        a: "rate limit",
        b: "rate limit exceeded",
      }),
    ).toBe('no match for "…"');
  });
});

describe("a text whose letters lower-case to more than one character (`İ`)", () => {
  // `İ` lower-cases to two UTF-16 units: a search on a lower-cased copy finds the echo at an
  // index that is not its index in the text.
  const text =
    "Şube İSTANBUL-İZMİR-İNEGÖL-İSKİLİP (İİİ): project abcdefghi forbidden: upstream timed out";

  it("masks the echo itself, not the word as many characters after it", () => {
    expect(maskArgumentEchoes(text, { project: "abcdefghi" })).toBe(
      "Şube İSTANBUL-İZMİR-İNEGÖL-İSKİLİP (İİİ): project … forbidden: upstream timed out",
    );
    expect(maskArgumentEchoes("İSTANBUL: 'İzmir-2' not found", { city: "İZMİR-2" })).toBe(
      "İSTANBUL: '…' not found",
    );
  });

  it("a person-only failure around the echo stays a stop, not a retry", () => {
    const c = classify(textFailure(text), tool, { args: { project: "abcdefghi" } });
    expect(c).toMatchObject({ action: "stop", reason: "forbidden" });
  });
});

describe("issue 27.3: values the model sent do not trigger a rule", () => {
  it("a search pattern holding a status word is not that status", () => {
    const f = textFailure("Search for 'unauthorized' returned no results in repository acme/api");
    // Without the call's arguments the text reads as an authentication failure...
    expect(classify(f, tool).action).toBe("stop");
    // ...with them, it is the model's own word: nothing found, the model changes the query.
    expect(classify(f, tool, { args: { query: "unauthorized" } })).toMatchObject({
      action: "correct_arguments",
      reason: "not_found",
    });
  });

  it("a filter on a status number is no outage, a quoted rate-limit phrase no rate limit", () => {
    const status = textFailure("No requests with status 503 in the selected window");
    expect(classify(status, tool).action).toBe("retry_dependency");
    expect(classify(status, tool, { args: { status: 503 } }).action).not.toBe("retry_dependency");
    const phrase = textFailure('Log query "rate limit exceeded" is invalid: unknown field');
    expect(classify(phrase, tool).action).toBe("retry_dependency");
    expect(classify(phrase, tool, { args: { query: "rate limit exceeded" } }).action).toBe(
      "correct_arguments",
    );
  });

  it("a real failure around an echoed value still reads as itself", () => {
    const f = textFailure("403 Forbidden: token lacks access to repository 'acme/api'");
    expect(classify(f, tool, { args: { repo: "acme/api" } })).toMatchObject({
      action: "stop",
      reason: "forbidden",
    });
  });

  it("a text that is nothing but the value is the server's own answer, not an echo", () => {
    // A search for "unauthorized" answered by a bare "Unauthorized" is a 401: no sentence around
    // the value says it is one the call sent.
    for (const [text, args] of [
      ["Unauthorized", { q: "unauthorized" }],
      ["Permission denied", { q: "permission denied" }],
      ["quota exceeded.", { q: "Quota exceeded" }],
    ] as const) {
      expect(maskArgumentEchoes(text, args), text).toBe(text);
      expect(classify(textFailure(text), tool, { args }).action, text).toBe("stop");
    }
  });

  it("a status an HTTP client reports for the response is no echo of a number the call sent", () => {
    for (const text of [
      "Request failed with status code 401",
      "HTTP 401: token expired",
      "HTTP/1.1 401",
      "Response code 401 from api.example.com",
    ]) {
      expect(maskArgumentEchoes(text, { status: 401 }), text).toBe(text);
      expect(classify(textFailure(text), tool, { args: { status: "401" } }), text).toMatchObject({
        action: "stop",
        reason: "unauthorized",
      });
    }
    // A value the text gives as what was asked for stays masked.
    expect(maskArgumentEchoes("no run with status 503", { status: 503 })).toBe(
      "no run with status …",
    );
  });

  it("--explain names the rule that read the masked text, not one an echo would have matched", () => {
    const f = textFailure("Search for 'unauthorized' returned no results in repository acme/api");
    const call = { args: { query: "unauthorized" } };
    const e = explainClassification(f, tool, classify(f, tool, call), call);
    expect(e.detail).toMatch(/\(not_found\)/);
    expect(e.detail).not.toMatch(/unauthori/);
  });
});
