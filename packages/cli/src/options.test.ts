import { describe, expect, it } from "vitest";
import { governor } from "../../../test/cli.ts";
import { parseOptions } from "./options.ts";

describe("parseOptions", () => {
  it("refuses an option it does not know with the options accepted, not Node's advice to use --", () => {
    const options = { json: { type: "boolean" }, policy: { type: "string" } } as const;
    expect(() => parseOptions({ args: ["--polcy", "p.json"], options, strict: true })).toThrow(
      /^unknown option --polcy; accepted: --json, --policy VALUE$/,
    );
    expect(() => parseOptions({ args: ["-x"], strict: true, allowPositionals: true })).toThrow(
      /^unknown option -x; accepted: none$/,
    );
  });

  it("parses as parseArgs does, and leaves its other errors as they are", () => {
    const options = { json: { type: "boolean" }, policy: { type: "string" } } as const;
    const { values, positionals } = parseOptions({
      args: ["log.jsonl", "--policy", "p.json", "--json"],
      options,
      allowPositionals: true,
      strict: true,
    });
    expect(values).toEqual({ policy: "p.json", json: true });
    expect(positionals).toEqual(["log.jsonl"]);
    expect(() => parseOptions({ args: ["--policy"], options, strict: true })).toThrow(
      /argument missing/,
    );
  });

  it("is what every command answers a misspelt option with, exit 2", async () => {
    for (const [args, list] of [
      [["classify", "--explian"], "--policy VALUE, --explain, --learned VALUE, --prefix VALUE"],
      [["report", "-", "--jsn"], "--json, --top VALUE, --html VALUE, --replay, --policy VALUE"],
      [["demo", "--observed"], "--json, --observe, --events VALUE"],
      [["check", "p.json", "--strict"], "none"],
    ] as const) {
      const ran = await governor([...args]);
      expect(ran.status, args.join(" ")).toBe(2);
      expect(ran.stderr).toBe(
        `governor ${args[0]}: unknown option ${args.at(-1)}; accepted: ${list}\n`,
      );
    }
  });
});
