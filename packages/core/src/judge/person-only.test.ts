import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Effect } from "../types.ts";
import { classify } from "./classify.ts";
import { stopsGuessedWrite } from "./decide.ts";
import { firstDecision, read, textFailure } from "./judge-text.support.ts";

// Issue 27 items 2-3: failures only a person can fix stop, and a write is repeated only on a
// structured or named transient condition. Every text here is a paraphrase of a class.

/** What the run does on the first failure of a call to a tool of `effect` (a key it honours). */
const run = (text: string, effect: Effect) => firstDecision(text, effect, true);

describe("a retry on a generic word is not repeated on a write", () => {
  it.each([
    "upstream answered with status 500",
    "Backend failure: internal server error while saving",
    "the export job timed out after 120s",
    "operation aborted: context deadline exceeded",
    "request to the billing API: fetch failed",
  ])("%s: retried on a read, stopped on a write", (text) => {
    const c = read(text);
    expect(c).toMatchObject({ action: "retry_dependency", weakRetry: true });
    expect(stopsGuessedWrite(c, "mutating")).toBe(true);
    expect(run(text, "read_only").action).toBe("retry_dependency");
    expect(run(text, "mutating")).toMatchObject({ action: "stop", reason: "uncertain_mutation" });
  });

  it.each([
    "gateway said 503 Service Unavailable, please retry",
    "upstream returned status 502",
    "write failed: ECONNRESET",
    "connect ETIMEDOUT 10.1.2.3:443",
    "the ledger database is locked by another writer",
    "Too many requests, slow down (429)",
  ])("%s: a named transient condition is retried on a write", (text) => {
    const c = read(text);
    expect(c.action).toBe("retry_dependency");
    expect(c.weakRetry).toBeUndefined();
    expect(run(text, "mutating").action).toBe("retry_dependency");
  });

  it("a policy rule's retry stays a retry", () => {
    const policy = loadPolicy({
      tools: { t: { rules: [{ match: "boom", action: "retry_dependency" }] } },
    });
    const c = classify(textFailure("boom: internal error"), resolveToolPolicy(policy, "t"));
    expect(c.source).toBe("policy");
    expect(stopsGuessedWrite(c, "mutating")).toBe(false);
  });
});

describe("a generic word yields to a specific phrasing the text also holds", () => {
  it.each([
    ["UNKNOWN_ERROR: something went wrong: field `title` is required", "correct_arguments"],
    ["internal error: the value of 'size' exceeds the maximum allowed (4096)", "correct_arguments"],
    ["status 470: connection refused by the upstream", "retry_dependency"],
  ])("%s", (text, action) => {
    expect(read(text).action).toBe(action);
  });

  it("a bare generic word still reads as a retry", () => {
    expect(read("An unknown error occurred.").action).toBe("retry_dependency");
  });
});

describe("a confirmation the schema requires is the user's to give", () => {
  it.each([
    'Invalid arguments for tool drop_table: [{"code": "invalid_literal", "expected": true, "path": ["confirmDrop"]}]',
    "status 400: set confirm to true to purge",
  ])("%s", (text) => {
    expect(read(text)).toMatchObject({ action: "stop", reason: "not_approved" });
  });

  it("a schema error on another field stays a correction", () => {
    expect(
      read('Invalid arguments for tool drop_table: [{"code": "invalid_type", "path": ["name"]}]')
        .action,
    ).toBe("correct_arguments");
  });
});

describe("person-only cues win over the status and wording they arrive with", () => {
  it.each([
    // credentials without a status of their own
    "status 400: no session found, run `acme auth login`",
    "code 500: wrong username or password supplied for the warehouse",
    "status 400: the access token you configured appears to be malformed",
    "status 400: invalid or revoked deploy token",
    "status 404: the specified access key is not found",
    "status code 503: the keystore is sealed",
    // an account or deployment only a person sets up
    "status 400: make sure your hardware wallet is connected",
    "code=503 (service_disabled): you can enable the service from the project console",
    "status 400: there is no ticketing integration configured for this board",
    // a plan, space or count the account allows
    "status 409: plan limit reached for the pages of this workspace",
    "HTTP 507: insufficient storage for the upload",
    "number of indexes cannot exceed 5, you already have 5",
    "search limit hit: 2000/1d",
    // the agent is told to ask a person
    "status 400: no region chosen, prompt the user for one",
    "status 400: inform the user before retrying the export",
    // a state of the record
    "status 400: the invoice is already paid and cannot be edited",
    "status 400: you cannot remove the last workspace owner",
    "status 400: only draft or scheduled posts can be deleted",
    // a scope the token lacks, a store that is read-only
    "status 400: this action requires scopes ['crm:write'] your token does not carry",
    "status 409: the archive bucket is read-only under its legal hold",
    // something to set up on the account, a password only a person knows, a record a person locked
    "status 400: noreply@acme.test is not a sender signature on your account",
    "status 400: posting to a closed month is refused unless you enter the override password",
    "status 409: the report is locked; unlock it to edit",
    // a TLS certificate nobody in the loop can make trusted
    "status 400: net::ERR_CERT_DATE_INVALID at https://old.example.test/",
    "Error: please run `acme login` first",
    // money the account lacks
    "execution reverted: withdrawal exceeds balance",
    // a record managed elsewhere, a delete that would take its contents, nothing left to do
    "status 400: the membership cannot be changed because it is managed by directory sync",
    "status 412: cannot delete a folder that still has files in it",
    "status 422: no changes to publish in this environment",
    // a write the server says may have happened
    "POST /orders failed: status 502; the order may have been created",
  ])("%s", (text) => {
    expect(read(text).action).toBe("stop");
    expect(run(text, "mutating").action).toBe("stop");
  });

  it.each([
    ["status 404: secret 'PAYMENTS_SECRET_KEY' not found in this environment", "correct_arguments"],
    ["throttled: the rate limit is 80/1m", "retry_dependency"],
    ["status 400: name is already taken", "correct_arguments"],
    ["status 400: the 'scope' parameter is required", "correct_arguments"],
    ["status 400: field 'createdAt' is read-only", "correct_arguments"],
    [
      "the endpoint may not be available for your account, try again in a moment",
      "retry_dependency",
    ],
  ])("%s: no person-only cue", (text, action) => {
    expect(read(text).action).toBe(action);
  });
});
