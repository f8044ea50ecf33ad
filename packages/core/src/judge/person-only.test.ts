import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import type { Effect } from "../types.ts";
import { classify } from "./classify.ts";
import { decide, stopsGuessedWrite } from "./decide.ts";
import { type Failure, failureFromResult } from "./failure.ts";

// Issue 27 items 2-3: failures only a person can fix stop, and a write is repeated only on a
// structured or named transient condition. Every text here is a paraphrase of a class.

const tool = resolveToolPolicy(loadPolicy({}), "t");
const textFailure = (text: string): Failure =>
  failureFromResult({ content: [{ type: "text", text }], isError: true });
const read = (text: string) => classify(textFailure(text), tool);

/** What the run does on the first failure of a call to a tool of `effect` (a key it honours). */
const run = (text: string, effect: Effect) =>
  decide({
    classification: read(text),
    tool,
    effect,
    attempt: 1,
    repeats: 1,
    keyed: true,
    remainingMs: Number.POSITIVE_INFINITY,
    random: () => 0.5,
  });

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
    ["HTTP 500 - upstream said: error 470 recipient is blocked", "retry_dependency"],
  ])("%s", (text, action) => {
    expect(read(text).action).toBe(action);
  });

  it("a bare generic word still reads as a retry", () => {
    expect(read("An unknown error occurred.").action).toBe("retry_dependency");
  });
});

describe("person-only cues win over the status and wording they arrive with", () => {
  it.each([
    // credentials without a status of their own
    "Error 400: no session found. Please run `acme auth login` first",
    "could not open the warehouse: wrong username or password supplied",
    "the access token you configured appears to be malformed",
    "Expired or revoked deploy token: sign in again",
    "status 404: the specified access key is not found",
    "status code 503: the keystore is sealed",
    // an account or deployment only a person sets up
    "Not possible: make sure your hardware wallet is connected",
    "code=503: the reporting service has been disabled, enable it from the admin console",
    "status 400: there is no ticketing integration configured for this board",
    // a plan, space or count the account allows
    "status 409: plan limit reached for the pages of this workspace",
    "HTTP 507: insufficient storage for the upload",
    "number of indexes cannot exceed 5, you already have 5",
    "search limit hit: 2000/1d",
    // the agent is told to ask a person
    "No region chosen: ask the user which region to deploy to",
    "status 400: prompt the user for the billing account to charge",
    // a state of the record
    "status 400: the invoice is already paid and cannot be edited",
    "status 400: you cannot remove the last workspace owner",
    "status 400: only draft or scheduled posts can be deleted",
    // a write the server says may have happened
    "POST /orders failed (network): it may have been carried out; check whether it took effect",
  ])("%s", (text) => {
    expect(read(text).action).toBe("stop");
    expect(run(text, "mutating").action).toBe("stop");
  });

  it.each([
    ["status 404: secret 'PAYMENTS_SECRET_KEY' not found in this environment", "correct_arguments"],
    ["throttled: the rate limit is 80/1m", "retry_dependency"],
    ["status 400: name is already taken", "correct_arguments"],
  ])("%s: no person-only cue", (text, action) => {
    expect(read(text).action).toBe(action);
  });
});
