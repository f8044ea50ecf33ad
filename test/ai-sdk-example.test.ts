import { readFileSync } from "node:fs";
import { MockLanguageModelV3 } from "ai/test";
import { expect, it } from "vitest";
import { callTool as call, say } from "../packages/ai-sdk/src/test-support/sdks.ts";
import { emailNote, type Mail, type Notes } from "./examples/ai-sdk-example.ts";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");

it("the README's and docs/ai-sdk.md's example is this file, verbatim", () => {
  const example = read("./examples/ai-sdk-example.ts").trimEnd();
  expect(read("../packages/ai-sdk/README.md")).toContain(example);
  expect(read("../docs/ai-sdk.md")).toContain(example);
});

it("the example runs: a wrong id corrected, a 503 retried unseen, one email sent with its key", async () => {
  let reads = 0;
  const notes: Notes = {
    async get(id) {
      reads += 1;
      if (id !== "welcome") throw new Error(`No note with id "${id}". Known ids: welcome`);
      if (reads === 2) throw new Error("503 Service Unavailable");
      return { id, body: "Welcome aboard" };
    },
  };
  const sent: { to: string; key: string }[] = [];
  const mail: Mail = {
    async send(to, _body, key) {
      sent.push({ to, key });
      return { id: "msg_1" };
    },
  };
  const model = new MockLanguageModelV3({
    doGenerate: [
      call("get_note", { id: "welcom" }, "c1"),
      call("get_note", { id: 7 }, "c2"),
      call("get_note", { id: "welcome" }, "c3"),
      call("send_email", { to: "team@example.com", body: "Welcome aboard" }, "c4"),
      say("Sent."),
    ],
  });

  const out = await emailNote(model, notes, mail);

  expect(out.text).toBe("Sent.");
  expect(sent).toEqual([{ to: "team@example.com", key: expect.stringMatching(/^gk_/) }]);
  expect(reads).toBe(3);
  expect(out.summary).toMatchObject({
    reason: "completed",
    calls: 4,
    retries: 1,
    actions: { correct_arguments: 2 },
  });
  expect(out.hostErrors).toEqual([]);
  expect(out.uncertainKeys).toEqual([]);
});
