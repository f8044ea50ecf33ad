/**
 * attack27: a Rust panic's location reached the model: `thread 'main' panicked at
 * src/main.rs:5:5:` (Rust 1.73+) and `panicked at 'msg', src/store.rs:12:9` (earlier) name a
 * relative source file and line, and the Rust rules only looked when a `stack backtrace:` was
 * there. Through a run with a host executor. The panic's message stays, and so does a panic told
 * with no location.
 */
import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";

async function modelText(message: string): Promise<string> {
  const run = createGovernor({ tools: { "*": { effect: "read_only" } } }).startRun();
  const outcome = await run.call({ tool: "get_note", args: {} }, async () => {
    throw new Error(message);
  });
  if (outcome.kind === "ok") throw new Error("the failure was read as a success");
  return outcome.result.content.map((c) => c.text).join("\n");
}

describe("attack27: a Rust panic's location", () => {
  const panics: [string, string, string][] = [
    [
      "thread 'main' panicked at src/main.rs:5:5:\ncalled `Option::unwrap()` on a `None` value",
      "src/main.rs",
      "called `Option::unwrap()` on a `None` value",
    ],
    [
      "thread 'tokio-runtime-worker' panicked at 'note store unavailable', src/store.rs:12:9",
      "src/store.rs",
      "note store unavailable",
    ],
    [
      "thread 'main' panicked at crates/notes/src/lib.rs:88:14: index out of bounds",
      "lib.rs",
      "index out of bounds",
    ],
  ];
  for (const [message, location, kept] of panics) {
    it(`${JSON.stringify(message)}: the model reads the panic, not the file`, async () => {
      const text = await modelText(message);
      expect(text).not.toContain(location);
      expect(text).toContain(kept);
    });
  }

  it("a compiler's location about the model's own code stays", async () => {
    const message = "error[E0308]: mismatched types --> src/main.rs:5:5";
    expect(await modelText(message)).toContain("src/main.rs:5:5");
  });

  it("a panic with no location stays", async () => {
    const message = "the worker panicked at startup: the queue is full";
    expect(await modelText(message)).toContain(message);
  });
});
