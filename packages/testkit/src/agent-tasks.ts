import type { AgentTask } from "./agent.ts";
import type { Scenario } from "./scenario.ts";

/**
 * The fault server's script for the demo tasks (merged over `DEFAULT_SCENARIO`, which keeps
 * `flaky_fetch` failing twice with 503 and `write_then_drop` losing its first response):
 * `set_status` is rate limited once (retry after 150 ms), `append_log` commits its first write and
 * then the server goes away before answering.
 */
export const DEMO_SCENARIO: Scenario = {
  set_status: [{ kind: "status", status: 429, retryAfterSeconds: 0.15 }],
  append_log: [{ kind: "drop_after_commit" }],
};

/**
 * The demo's tasks, one failure mode each, in the order they run. Each strategy runs them all
 * against a fresh fault server started with {@link DEMO_SCENARIO}. The two lost responses come
 * last: each kills the server process, and every respawn costs about a second.
 */
export const DEMO_TASKS: readonly AgentTask[] = [
  {
    id: "unknown-note-id",
    title: "read a note by a wrong id (the error lists the known ids)",
    first: { name: "get_note", arguments: { id: "drafts" } },
  },
  {
    id: "invalid-limit",
    title: "search with limit 500 (the error names the range 1..50)",
    first: { name: "search_notes", arguments: { query: "release", limit: 500 } },
  },
  {
    id: "flaky-read",
    title: "fetch a URL that answers 503 twice, then 200",
    first: { name: "flaky_fetch", arguments: { url: "https://status.example.com/health" } },
  },
  {
    id: "rate-limited",
    title: "set a status; the first call is rate limited (429, retry after 150 ms)",
    first: { name: "set_status", arguments: { id: "welcome", status: "published" } },
  },
  {
    id: "permission-denied",
    title: "delete an account without the scope (nobody in the loop can fix it)",
    first: { name: "delete_account", arguments: { id: "acct-42" } },
  },
  {
    id: "business-rule",
    title: "transfer 5000, above the daily limit (refused by a rule)",
    first: { name: "transfer_funds", arguments: { amount: 5000 } },
  },
  {
    id: "crash-with-secrets",
    title: "a tool crashes; its raw error holds a stack trace and credentials",
    first: { name: "crash_with_stack", arguments: {} },
    switchArgs: { search_notes: { query: "release" } },
  },
  {
    id: "unknown-tool",
    title: "call get_notes, a tool that does not exist",
    first: { name: "get_notes", arguments: { id: "welcome" } },
  },
  {
    id: "lost-response-keyed",
    title: "a write whose response is lost after commit (the tool honors keys)",
    first: { name: "write_then_drop", arguments: { title: "Quarterly report" } },
  },
  {
    id: "lost-response-unkeyed",
    title: "append a log line; the response is lost after commit (no key support)",
    first: { name: "append_log", arguments: { line: "deploy 1.4.2 started" } },
  },
];
