import { readFileSync } from "node:fs";
import { type HttpFaultServer, startHttpServer } from "@governor/testkit";
import { MCPServerStreamableHttp, setTracingDisabled } from "@openai/agents";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTask } from "../examples/openai-agents.ts";
import { ReactiveModel, SDK_UNSUPPORTED, SKIP_REASON } from "./openai-agents-support.ts";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");

/** The first fenced `ts` block after `heading`. */
function firstTsBlock(text: string, heading: string): string {
  const from = text.indexOf(heading);
  expect(from, heading).toBeGreaterThanOrEqual(0);
  const open = text.indexOf("```ts\n", from) + "```ts\n".length;
  return text.slice(open, text.indexOf("\n```", open) + 1);
}

describe("the openai-agents example", () => {
  it("is the code the package README and docs/openai-agents.md show", () => {
    const example = read("../examples/openai-agents.ts");
    expect(firstTsBlock(read("../packages/openai-agents/README.md"), "## Example")).toBe(example);
    expect(firstTsBlock(read("../docs/openai-agents.md"), "## Example")).toBe(example);
  });
});

describe.skipIf(SDK_UNSUPPORTED)(`the openai-agents example runs (${SKIP_REASON})`, () => {
  let http: HttpFaultServer;
  let notes: MCPServerStreamableHttp;

  beforeAll(async () => {
    setTracingDisabled(true);
    http = await startHttpServer({ jsonResponse: true });
    notes = new MCPServerStreamableHttp({ name: "notes", url: http.url });
    await notes.connect();
  });
  afterAll(async () => {
    await notes?.close();
    await http?.close();
  });

  it("corrects a wrong order id and writes one note, with its key", async () => {
    const model = new ReactiveModel((v) => {
      if (v.turn === 1) return { calls: [{ name: "get_order", args: { id: "1001" } }] };
      if (v.turn === 2 && v.last[0]?.text.includes("A-1001")) {
        return {
          calls: [
            { name: "get_order", args: { id: "A-1001" } },
            { name: "create_note", args: { title: "Order A-1001", body: "shipped" } },
          ],
        };
      }
      return { say: v.last.map((r) => r.text).join(" | ") };
    });
    const result = await runTask("Note the status of order 1001", notes, model);
    expect(model.views[1]?.last[0]?.text).toMatch(/^get_order: no order with id "1001"/);
    expect(result).toMatchObject({ summary: { reason: "completed", calls: 3 } });
    expect(result.output).toMatch(/^2 items, shipped \| Created note .* with id note-1$/);
    const effects = http.state.effects();
    expect(effects).toHaveLength(1);
    expect(effects[0]?.key).toMatch(/^gk_/);
  });

  it("a permission error ends the task with Governor's reason", async () => {
    const model = new ReactiveModel(() => ({
      calls: [{ name: "delete_account", args: { id: "acct-1" } }],
    }));
    const result = await runTask("Delete account acct-1", notes, model);
    expect(result).toMatchObject({ stopped: "forbidden", summary: { reason: "forbidden" } });
  });
});
