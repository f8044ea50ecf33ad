// Review 28: PARTIAL_BATCH's words (`partial failure|success|write|commit|insert|import`) were also
// read on the text with its identifiers split into words, so an operation's or a handler's name
// that holds them stopped an ordinary validation error of a write as `partial_success` (a write
// that may have happened, for a person to check) instead of handing it to the model to correct.
// 321b7fa took `partial update` out for `tickets_partial_update`; the same hole stayed open for
// every other word of the rule. The words are now read on the text as written only.
import { createGovernor } from "@governor/core";
import { describe, expect, it } from "vitest";

const failed = (t: string) => ({ content: [{ type: "text", text: t }], isError: true });

async function outcomeOf(text: string) {
  const gov = createGovernor(
    { tools: { import_rows: { effect: "mutating" } } },
    { metrics: false },
  );
  return gov
    .startRun()
    .call({ tool: "import_rows", args: { rows: [1] } }, async () => failed(text));
}

describe("an identifier that holds PARTIAL_BATCH's words", () => {
  it.each([
    "Failed to call records_partial_write with request: method='POST', error: 400 invalid status",
    "Error calling tool 'issues_partial_success_handler': 400 invalid label",
    "Error in import_partial_failure_report: invalid date format",
    "Failed to call uploads_partial_commit: 400 Bad Request: 'status' must be one of open, closed",
  ])("%s is not read as a batch written in part", async (text) => {
    expect(await outcomeOf(text)).not.toMatchObject({ reason: "partial_success" });
  });

  it.each([
    "Partial failure: row 4: invalid date",
    "partial_failure_error: operation 2: invalid date",
    "Error: partial write: 2 rows rejected: invalid date",
  ])("%s still stops as a batch written in part", async (text) => {
    expect(await outcomeOf(text)).toMatchObject({ kind: "stop", reason: "partial_success" });
  });
});
