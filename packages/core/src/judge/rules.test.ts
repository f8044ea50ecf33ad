import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { loadPolicy, resolveToolPolicy } from "../policy/policy.ts";
import { type Action, REASONS, type Reason } from "../types.ts";
import { classify } from "./classify.ts";
import { failureFromResult, stripMcpPrefix } from "./failure.ts";
import { BUILTIN_RULES, classifyHttpStatus, matchBuiltinRules } from "./rules.ts";

type Case = readonly [text: string, reason: Reason, action: Action];

/** Checks each text lands on the expected reason and action; reports every miss at once. */
function expectCases(cases: readonly Case[]): void {
  const misses = cases.flatMap(([text, reason, action]) => {
    const rule = matchBuiltinRules(text);
    return rule?.reason === reason && rule.action === action
      ? []
      : [
          `${text} -> ${rule?.reason ?? "none"}/${rule?.action ?? "none"}, want ${reason}/${action}`,
        ];
  });
  expect(misses).toEqual([]);
}

// Phrasings written for these tests, not taken from the corpus: the rules must carry over.
describe("BUILTIN_RULES families", () => {
  it("unknown, disabled or retired tools switch tool", () => {
    expectCases([
      ["Unknown tool: list_pull_requests", "unknown_tool", "switch_tool"],
      ["Tool 'create_invoice' not found", "unknown_tool", "switch_tool"],
      ["tool not found", "unknown_tool", "switch_tool"],
      ["Error: tool not found: db.query", "unknown_tool", "switch_tool"],
      ["No such tool: summarize", "unknown_tool", "switch_tool"],
      ["Tool github:merge_pr does not exist", "unknown_tool", "switch_tool"],
      ["Tool send_sms is disabled", "not_supported", "switch_tool"],
      ["Tool `export_pdf` is not available in this session", "not_supported", "switch_tool"],
      ["This endpoint has been deprecated and removed", "not_supported", "switch_tool"],
      ["Wrong tool for this data source", "not_supported", "switch_tool"],
      ["Use the 'write_file' tool instead", "not_supported", "switch_tool"],
      ["Only SELECT statements are allowed here", "not_supported", "switch_tool"],
      ["DELETE statements are not allowed for run_readonly_query", "not_supported", "switch_tool"],
    ]);
  });

  it("does not take a failure inside a tool for an unknown tool", () => {
    expect(matchBuiltinRules("Error executing tool get_user: not found")?.reason).toBe("not_found");
    expect(matchBuiltinRules("Error calling tool fetch: 404 Not Found")?.reason).toBe("not_found");
  });

  it("operations the tool or deployment cannot do switch tool", () => {
    expectCases([
      ["Operation not supported", "not_supported", "switch_tool"],
      ["Not implemented", "not_supported", "switch_tool"],
      ["This server does not support write operations", "not_supported", "switch_tool"],
      ["Unsupported operation: bulk_delete", "not_supported", "switch_tool"],
      ["HTTP 501 Not Implemented", "not_supported", "switch_tool"],
      [
        "EXDEV: cross-device link not permitted, rename '/a' -> '/b'",
        "not_supported",
        "switch_tool",
      ],
    ]);
  });

  it("schema and argument errors correct the arguments", () => {
    expectCases([
      [
        "Input validation error: 'limit' must be an integer",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Invalid arguments for tool search: [{...}]", "invalid_argument", "correct_arguments"],
      ["2 validation errors for SearchParams", "invalid_argument", "correct_arguments"],
      [
        "Invalid params: additional property 'foo' not allowed",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Missing required parameter: owner", "invalid_argument", "correct_arguments"],
      ["limit must be between 1 and 100", "invalid_argument", "correct_arguments"],
      ["Unsupported file format: .heic", "invalid_argument", "correct_arguments"],
      ["Timezone 'Mars/Olympus' is not supported", "invalid_argument", "correct_arguments"],
      [
        "Only alphanumeric characters are allowed in the name",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "ValidationException: Value at 'limit' failed to satisfy constraint",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Failed to parse date '31/31/2024'", "invalid_argument", "correct_arguments"],
      ["HTTP 422 Unprocessable Entity", "invalid_argument", "correct_arguments"],
      ["Request failed with status code 400", "invalid_argument", "correct_arguments"],
    ]);
  });

  it("paths and values outside an allowlist correct the arguments", () => {
    expectCases([
      [
        "Access denied: /root/.ssh is outside the allowed roots",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Path is outside of the workspace", "invalid_argument", "correct_arguments"],
      [
        "Host evil.example is not in the allowed hosts list",
        "invalid_argument",
        "correct_arguments",
      ],
    ]);
  });

  it("missing things and conflicts correct the arguments", () => {
    expectCases([
      ["Issue #4242 not found", "not_found", "correct_arguments"],
      ["Table 'shop.ordrs' doesn't exist", "not_found", "correct_arguments"],
      ["NoSuchKey: The specified key does not exist.", "not_found", "correct_arguments"],
      ["Unknown column 'nme' in 'field list'", "not_found", "correct_arguments"],
      ["Could not find a project with key 'ABC'", "not_found", "correct_arguments"],
      ["No matching documents found", "not_found", "correct_arguments"],
      ["ENOENT: no such file or directory, stat '/x'", "not_found", "correct_arguments"],
      ["getaddrinfo ENOTFOUND api.exmaple.com", "not_found", "correct_arguments"],
      ["A branch named 'main' already exists", "conflict", "correct_arguments"],
      ["Duplicate entry 'a@b.c' for key 'users.email'", "conflict", "correct_arguments"],
      ["HTTP 409 Conflict", "conflict", "correct_arguments"],
    ]);
  });

  it("rate limits and throttling retry", () => {
    expectCases([
      ["Rate limit reached, retry after 20s", "rate_limited", "retry_dependency"],
      ["429 Too Many Requests", "rate_limited", "retry_dependency"],
      ["TooManyRequestsException: slow down", "rate_limited", "retry_dependency"],
      [
        "Request was throttled. Expected available in 3 seconds.",
        "rate_limited",
        "retry_dependency",
      ],
      ["API error (status 429)", "rate_limited", "retry_dependency"],
      [
        "Quota exceeded for metric 'Read requests' and limit 'Read requests per minute'",
        "rate_limited",
        "retry_dependency",
      ],
      ["RESOURCE_EXHAUSTED: try later", "rate_limited", "retry_dependency"],
    ]);
  });

  it("quota, credits and billing stop", () => {
    expectCases([
      ["You exceeded your current quota, please check your plan", "quota_exceeded", "stop"],
      ["Your credit balance is too low to access the API", "quota_exceeded", "stop"],
      ["Monthly search limit reached", "quota_exceeded", "stop"],
      ["Payment required: add a payment method", "quota_exceeded", "stop"],
      ["Rate limit exceeded. Upgrade your plan for higher limits.", "quota_exceeded", "stop"],
      ["HTTP 402", "quota_exceeded", "stop"],
    ]);
  });

  it("credentials stop", () => {
    expectCases([
      ["401 Unauthorized", "unauthorized", "stop"],
      ["Invalid token", "unauthorized", "stop"],
      ["The access token has expired", "unauthorized", "stop"],
      ["Incorrect API key provided: sk-****", "unauthorized", "stop"],
      ["API key not valid. Please pass a valid API key.", "unauthorized", "stop"],
      ["x-api-key header is required", "unauthorized", "stop"],
      ["Authentication required", "unauthorized", "stop"],
      ["Request had invalid authentication credentials", "unauthorized", "stop"],
      ["UNAUTHENTICATED: jwt expired", "unauthorized", "stop"],
      ["insufficient_scope", "unauthorized", "stop"],
      ["Your account has been suspended", "unauthorized", "stop"],
      ["Session expired, please log in again", "unauthorized", "stop"],
    ]);
  });

  it("a page token is an argument, not a credential", () => {
    expect(matchBuiltinRules("Invalid page token")?.action).toBe("correct_arguments");
  });

  it("missing permissions stop", () => {
    expectCases([
      ["403 Forbidden", "forbidden", "stop"],
      ["PERMISSION_DENIED: The caller does not have permission", "forbidden", "stop"],
      ["Resource not accessible by integration", "forbidden", "stop"],
      ["Access denied for user 'bot'@'%' to database 'hr'", "forbidden", "stop"],
      ["You are not authorized to delete this project", "forbidden", "stop"],
      ["Insufficient privileges to run ALTER TABLE", "forbidden", "stop"],
      ["EACCES: permission denied, mkdir '/var/lib/x'", "forbidden", "stop"],
      ["Action blocked by organization policy", "forbidden", "stop"],
    ]);
  });

  // Issue 12.4: each cue with texts of at least two services (named in the comment of each row).
  it("person-only cues in a service's own words stop, ahead of argument-like wording", () => {
    expectCases([
      // A right the caller lacks: Redis ACL, Discord, Linear, GCP IAM, MySQL, Telegram, HubSpot, Shopify.
      ["NOPERM this user has no permissions to run the 'set' command", "forbidden", "stop"],
      ["NOPERM No permissions to access a key", "forbidden", "stop"],
      ["DiscordAPIError[50013]: Missing Permissions", "forbidden", "stop"],
      ["DiscordAPIError[50001]: Missing Access", "forbidden", "stop"],
      ["You need the admin permission to perform this action", "forbidden", "stop"],
      ["The token needs the channels:write scope", "forbidden", "stop"],
      [
        "Permission 'storage.objects.get' denied on resource (or it may not exist).",
        "forbidden",
        "stop",
      ],
      ["DELETE command denied to user 'etl'@'%' for table 'audit_log'", "forbidden", "stop"],
      ["Bad Request: not enough rights to send text messages to the chat", "forbidden", "stop"],
      ["This app hasn't been granted all required scopes to make this call.", "forbidden", "stop"],
      [
        "Access denied for products field. Required access: `read_products` access scope.",
        "forbidden",
        "stop",
      ],
      ["This action requires merchant approval for write_orders scope.", "forbidden", "stop"],
      [
        "The client 'abc' does not have authorization to perform action 'Microsoft.Resources/read'",
        "forbidden",
        "stop",
      ],
      [
        "If you need access to this endpoint, you may need a different access level.",
        "forbidden",
        "stop",
      ],
      // A feature, API or region not enabled: AWS, Twilio, GCP, Perplexity, OpenAI, Gemini.
      ["The requested operation is not enabled for this region", "forbidden", "stop"],
      [
        "Permission to send an SMS has not been enabled for the region indicated by the 'To' number",
        "forbidden",
        "stop",
      ],
      [
        "Cloud Run Admin API has not been used in project 123 before or it is disabled. Enable it by visiting https://console.example/apis then retry.",
        "forbidden",
        "stop",
      ],
      ["Your account is not enabled for this feature", "forbidden", "stop"],
      ["Country, region, or territory not supported", "forbidden", "stop"],
      ["User location is not supported for the API use.", "forbidden", "stop"],
      ["This model is not available in your region", "forbidden", "stop"],
      // An account to verify or activate: X, OpenAI, SendGrid, Stripe-like payments.
      ["You must verify your account before you can perform this action", "unauthorized", "stop"],
      [
        "Your organization must be verified to use the model `o3`. Please go to settings and click on Verify Organization.",
        "unauthorized",
        "stop",
      ],
      [
        "The from address does not match a verified Sender Identity. Mail cannot be sent until this error is resolved.",
        "unauthorized",
        "stop",
      ],
      [
        "Your account cannot currently make live charges. Please complete your account activation.",
        "unauthorized",
        "stop",
      ],
      ["Email address is not verified", "unauthorized", "stop"],
      // A plan: Spotify, Zoom, Azure.
      ["Player command failed: Premium required", "quota_exceeded", "stop"],
      ["This endpoint requires a paid plan", "quota_exceeded", "stop"],
      [
        "The subscription is not registered to use namespace 'Microsoft.App'.",
        "quota_exceeded",
        "stop",
      ],
      ["Webhooks are not available on your current plan", "quota_exceeded", "stop"],
      // Content policies: OpenAI, Anthropic, Azure OpenAI.
      ["Your request was rejected as a result of our safety system.", "business_rule", "stop"],
      [
        "Invalid prompt: your prompt was flagged as potentially violating our usage policy.",
        "business_rule",
        "stop",
      ],
      ["Output blocked by content filtering policy", "business_rule", "stop"],
      [
        "The response was filtered due to the prompt triggering the content management policy.",
        "business_rule",
        "stop",
      ],
    ]);
  });

  // Written for these tests, two services or more per cue; none quotes test/corpus.
  it("more general cues: features and plans per account, balances, tokens, transient errors", () => {
    expectCases([
      ["Instant payouts are not enabled for this merchant", "forbidden", "stop"],
      ["Bulk export is not enabled for your organization", "forbidden", "stop"],
      ["This endpoint is not available for your plan", "forbidden", "stop"],
      ["Webhooks are not allowed for this application", "forbidden", "stop"],
      ["You do not have enough credits to run this job", "quota_exceeded", "stop"],
      ["The wallet doesn't have enough balance for this transfer", "quota_exceeded", "stop"],
      ["Authorization failed: check your API key", "unauthorized", "stop"],
      ["authorisation failure (code 7)", "unauthorized", "stop"],
      ["Missing authorization token in request", "unauthorized", "stop"],
      ["No API key configured for the weather service", "unauthorized", "stop"],
      ["The bearer token is not in a valid format", "unauthorized", "stop"],
      ["httpx.ConnectError: connection attempts failed", "connection_refused", "retry_dependency"],
      ["Connection attempt failed for host db:5432", "connection_refused", "retry_dependency"],
      ["A transient network error occurred, try again shortly", "unavailable", "retry_dependency"],
      [
        "Oops, something broke. Please try again after some time.",
        "unavailable",
        "retry_dependency",
      ],
      ["The exporter is configured incorrectly: no bucket set", "misconfigured", "stop"],
      ["Search backend is improperly configured", "misconfigured", "stop"],
    ]);
  });

  it("a payment the call is about that failed is not the caller's billing", () => {
    expectCases([
      ["retrieving payment failed: no such payment: pay_123", "not_found", "correct_arguments"],
      ["refund lookup failed: pi_42 is not a valid id", "invalid_argument", "correct_arguments"],
      [
        "Payment failed: your card was declined, update your payment method",
        "quota_exceeded",
        "stop",
      ],
    ]);
  });

  it("a browser that waited for the element the model named is not a transient timeout", () => {
    expectCases([
      [
        "locator.fill: Timeout 5000ms exceeded. waiting for locator('#email')",
        "not_found",
        "correct_arguments",
      ],
      [
        "Waiting for selector `.cart-item` failed: Waiting failed: 30000ms exceeded",
        "not_found",
        "correct_arguments",
      ],
      [
        "TimeoutError: waiting for element to be visible: //button[@id='go']",
        "not_found",
        "correct_arguments",
      ],
      ["Navigation timeout of 30000 ms exceeded", "timeout", "retry_dependency"],
    ]);
  });

  it("argument wording about permissions, regions and accounts stays the model's", () => {
    expectCases([
      [
        "Invalid value for 'permissions': expected an array of strings",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "Region 'us-west-9' is not supported. Supported regions: us-east-1, eu-west-1",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Unsupported region: mars-1", "invalid_argument", "correct_arguments"],
      [
        "Permission level must be one of read, write, admin",
        "invalid_argument",
        "correct_arguments",
      ],
      ["The 'verify' option must be a boolean", "invalid_argument", "correct_arguments"],
      ["Account ID must be 12 digits", "invalid_argument", "correct_arguments"],
      ["Policy 'p-123' not found", "not_found", "correct_arguments"],
      ["role 'admn' does not exist", "not_found", "correct_arguments"],
      ["project 'acme' not found or you don't have access to it", "not_found", "correct_arguments"],
      ["Missing access key id in arguments", "invalid_argument", "correct_arguments"],
    ]);
  });

  it("a write reported done, then a side step that failed, is a partial success", () => {
    expectCases([
      [
        "Issue #41 was created, but adding the label 'bug' failed: label not found",
        "partial_success",
        "stop",
      ],
      [
        "Event created successfully, but sending invitations failed: 503",
        "partial_success",
        "stop",
      ],
      [
        "Message posted to #general; failed to add reaction: invalid_name",
        "partial_success",
        "stop",
      ],
      [
        "Ticket PROJ-12 updated, but the transition to Done failed: field 'resolution' is required",
        "partial_success",
        "stop",
      ],
    ]);
  });

  it("read-only deployments, configuration and business rules stop", () => {
    expectCases([
      ["Server is running in read-only mode", "business_rule", "stop"],
      ["cannot write to a read only file system", "business_rule", "stop"],
      ["This project is archived", "business_rule", "stop"],
      ["GITHUB_TOKEN environment variable is not set", "misconfigured", "stop"],
      ["Server misconfigured: no base URL", "misconfigured", "stop"],
      ["ENOSPC: no space left on device, write", "misconfigured", "stop"],
      ["The user declined the confirmation", "not_approved", "stop"],
      ["Deleting the default branch is not allowed", "business_rule", "stop"],
      ["Cannot close the invoice because it has open payments", "business_rule", "stop"],
    ]);
  });

  it("transient dependency failures retry", () => {
    expectCases([
      ["503 Service Unavailable", "unavailable", "retry_dependency"],
      [
        "The service is temporarily unavailable, please try again later",
        "unavailable",
        "retry_dependency",
      ],
      ["Model is overloaded", "unavailable", "retry_dependency"],
      ["SQLITE_BUSY: database is locked", "unavailable", "retry_dependency"],
      [
        "Deadlock found when trying to get lock; try restarting transaction",
        "unavailable",
        "retry_dependency",
      ],
      ["Too many connections", "unavailable", "retry_dependency"],
      ["HTTP Error 502: Bad Gateway", "upstream_error", "retry_dependency"],
      ["Internal Server Error", "upstream_error", "retry_dependency"],
      ["InternalFailure: an unknown error occurred", "upstream_error", "retry_dependency"],
      ["(504) Gateway Timeout", "timeout", "retry_dependency"],
      ["Request timed out after 30000ms", "timeout", "retry_dependency"],
      ["DEADLINE_EXCEEDED", "timeout", "retry_dependency"],
      ["read ECONNRESET", "connection_closed", "retry_dependency"],
      ["socket hang up", "connection_closed", "retry_dependency"],
      ["Connection reset by peer", "connection_closed", "retry_dependency"],
      [
        "upstream connect error or disconnect/reset before headers",
        "connection_closed",
        "retry_dependency",
      ],
      ["connect ECONNREFUSED 10.0.0.5:443", "connection_refused", "retry_dependency"],
      ["Failed to connect to api.internal:8080", "connection_refused", "retry_dependency"],
      ["getaddrinfo EAI_AGAIN api.github.com", "unavailable", "retry_dependency"],
      ["TypeError: fetch failed", "network_error", "retry_dependency"],
    ]);
  });

  it("carries over to phrasings of other servers and APIs", () => {
    const cases: ReadonlyArray<readonly [string, Action]> = [
      ["GET https://api.example.com/repos/a/b/issues/9: 404 Not Found []", "correct_arguments"],
      ["POST https://api.example.com/repos/a/b/pulls: 422 Validation Failed", "correct_arguments"],
      ["GET https://api.example.com/user: 401 Bad credentials []", "stop"],
      [
        "POST https://api.example.com/issues: 403 You have exceeded a secondary rate limit",
        "retry_dependency",
      ],
      ["body failed validation: body.parent.page_id should be a valid uuid", "correct_arguments"],
      ["API token is invalid.", "stop"],
      ["You did not provide an API key.", "stop"],
      [
        "Error: page.goto: net::ERR_CONNECTION_REFUSED at http://localhost:3000/",
        "retry_dependency",
      ],
      ["TimeoutError: locator.click: Timeout 5000ms exceeded.", "retry_dependency"],
      ["Error response from daemon: No such container: web-1", "correct_arguments"],
      ["Cannot connect to the Docker daemon. Is the docker daemon running?", "retry_dependency"],
      ['Error from server (NotFound): pods "web-0" not found', "correct_arguments"],
      ['Error from server (Forbidden): pods is forbidden: User "bot" cannot list pods', "stop"],
      ["error: You must be logged in to the server (Unauthorized)", "stop"],
      ["Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout", "retry_dependency"],
      ["AxiosError: timeout of 10000ms exceeded", "retry_dependency"],
      ["Quota exceeded for quota metric 'Queries' and limit 'Queries per day'", "stop"],
      ["The user has exceeded their Drive storage quota", "stop"],
      ["googleapi: Error 429: Rate Limit Exceeded, rateLimitExceeded", "retry_dependency"],
      ["googleapi: Error 500: Backend Error, backendError", "retry_dependency"],
      ["The remote server returned an error: (503) Server Unavailable.", "retry_dependency"],
      ["ERROR 1045 (28000): Access denied for user 'root'@'localhost'", "stop"],
      [
        "ERROR 1205 (HY000): Lock wait timeout exceeded; try restarting transaction",
        "retry_dependency",
      ],
      ["MongoServerError: bad auth : Authentication failed.", "stop"],
      ["Server disconnected without sending a response.", "retry_dependency"],
      [
        "The requested model 'x' does not exist or you do not have access to it.",
        "correct_arguments",
      ],
      ["Error: spawn git ENOENT", "stop"],
      ["This feature is only available on paid plans", "stop"],
      ["Cannot create issue because the title is empty", "correct_arguments"],
      ["Cannot merge because the branch has conflicts", "correct_arguments"],
      ["Write operations are not allowed in read_only mode", "stop"],
      ["This request violates our usage policy", "stop"],
      ["Please retry with a valid ID", "correct_arguments"],
    ];
    const misses = cases
      .map(([text, action]) => [
        text,
        action,
        matchBuiltinRules(text)?.action ?? "correct_arguments",
      ])
      .filter(([, want, got]) => want !== got)
      .map(([text, want, got]) => `${text} -> ${got}, want ${want}`);
    expect(misses).toEqual([]);
  });

  it("sets the certainty per failure class", () => {
    expect(matchBuiltinRules("connection refused")?.certainty).toBe("not_sent");
    expect(matchBuiltinRules("Request timed out")?.certainty).toBe("unknown");
    expect(matchBuiltinRules("502 Bad Gateway")?.certainty).toBe("unknown");
    expect(matchBuiltinRules("ECONNRESET")?.certainty).toBe("unknown");
    expect(matchBuiltinRules("503 Service Unavailable")?.certainty).toBe("failed");
    expect(matchBuiltinRules("Too Many Requests")?.certainty).toBe("failed");
    expect(matchBuiltinRules("Permission denied")?.certainty).toBe("failed");
    expect(matchBuiltinRules("Invalid date")?.certainty).toBe("failed");
  });

  it("leaves texts it has no phrasing for to the caller", () => {
    expect(matchBuiltinRules("")).toBeUndefined();
    expect(matchBuiltinRules("Something went sideways")).toBeUndefined();
  });

  it("only looks at the head of long texts, fast", () => {
    const filler = "x".repeat(5000);
    expect(matchBuiltinRules(`${filler} rate limit exceeded`)).toBeUndefined();
    expect(matchBuiltinRules(`rate limit exceeded ${filler}`)?.reason).toBe("rate_limited");
    const nasty = `${"tool ".repeat(2000)}${"a_".repeat(5000)}${" -".repeat(5000)}`;
    const started = performance.now();
    matchBuiltinRules(nasty);
    matchBuiltinRules("api key ".repeat(10_000));
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("every rule is consistent with REASONS and stateless", () => {
    for (const rule of BUILTIN_RULES) {
      expect(REASONS[rule.reason]).toBe(rule.action);
      expect(rule.pattern.global || rule.pattern.sticky).toBe(false);
    }
  });
});

describe("issue 27: failure classes found on six more servers' texts", () => {
  it("a status stated after a verb is the status", () => {
    expectCases([
      ["Upload failed. The status code is 403.", "forbidden", "stop"],
      ["Sync failed: upstream status was 502", "upstream_error", "retry_dependency"],
      ["Sync failed, the status code was 429", "rate_limited", "retry_dependency"],
      ["Lookup failed, status code is 404", "not_found", "correct_arguments"],
    ]);
    // A count after `status of` is no status.
    expect(matchBuiltinRules("Failed to update the status of 500 orders")).toBeUndefined();
  });

  it("a server setting missing from its environment stops, unless an argument can stand in", () => {
    expectCases([
      ["Missing env vars: SHOP_DOMAIN, SHOP_TOKEN", "misconfigured", "stop"],
      ["Set the SHOP_DOMAIN and SHOP_REGION environment variables first", "misconfigured", "stop"],
      // Environment variables the call itself sets (a deploy tool's) are arguments.
      [
        "Invalid env var name 'FOO-BAR': must match [A-Z_]+",
        "invalid_argument",
        "correct_arguments",
      ],
      ["ACME_API_TOKEN is not set", "misconfigured", "stop"],
      ["WEBHOOK_SECRET must be set", "misconfigured", "stop"],
      ["user_id is required", "invalid_argument", "correct_arguments"],
      [
        "WORKSPACE_ID is not set in the environment variables and the 'workspace' parameter is not provided",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "Either set the ACME_KEY environment variables, or send apiKey in the request",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "Specify the teamId or set DEFAULT_TEAM in the environment variables",
        "invalid_argument",
        "correct_arguments",
      ],
    ]);
  });

  it("a lock another party holds retries; a record a rule of the domain locked stops", () => {
    expectCases([
      [
        "Blocked: could not acquire the write lock on the project",
        "unavailable",
        "retry_dependency",
      ],
      [
        "Publish lock is currently held; access blocked until it is released",
        "unavailable",
        "retry_dependency",
      ],
      ["The row is locked by another transaction", "unavailable", "retry_dependency"],
      ["The fiscal period is locked", "business_rule", "stop"],
      ["Timesheet for week 32 has been locked after approval", "business_rule", "stop"],
      ["The invoice is locked and cannot be changed", "business_rule", "stop"],
      ["The document is locked by another user", "unavailable", "retry_dependency"],
    ]);
  });

  it("a change nobody confirmed, or a client that cannot ask, stops", () => {
    expectCases([
      ["Archive project was not confirmed; nothing changed", "not_approved", "stop"],
      ["The transfer request was not approved", "not_approved", "stop"],
      ["This tool requires elicitation; use a client that supports it", "misconfigured", "stop"],
      ["Your MCP client does not support confirmations", "misconfigured", "stop"],
    ]);
  });

  it("limits counted per day or month stop; per second or minute retry", () => {
    expectCases([
      ["Rate limit exceeded: 500 calls per month on this key", "quota_exceeded", "stop"],
      ["Too many requests: limit is 50 per day for your key", "quota_exceeded", "stop"],
      ["Rate limit exceeded: 20 requests per minute", "rate_limited", "retry_dependency"],
    ]);
  });

  it("a value the model chose that is taken or gone is the model's to change", () => {
    expectCases([
      ["The requested delivery window is no longer available", "conflict", "correct_arguments"],
      ["Selected room was already taken", "conflict", "correct_arguments"],
      ["Item is unavailable in the requested quantity", "conflict", "correct_arguments"],
      // A service that is unavailable is an outage, whoever requested it.
      ["The requested service is temporarily unavailable", "unavailable", "retry_dependency"],
      ["This endpoint is no longer available", "not_supported", "switch_tool"],
    ]);
  });

  it("timeout as an argument, a query too broad to finish, and a body refused under a 5xx are corrections", () => {
    expectCases([
      ["'timeout' must be at most 120", "invalid_argument", "correct_arguments"],
      ["timeout value is out of range", "invalid_argument", "correct_arguments"],
      ["Invalid timeout: -5", "invalid_argument", "correct_arguments"],
      [
        "Query timed out: the date range is too large, narrow it",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Statement timeout: scanned too much data", "invalid_argument", "correct_arguments"],
      ["Connection pool timed out: too many clients", "unavailable", "retry_dependency"],
      [
        "500 Internal Server Error - validation failed: name is blank",
        "invalid_argument",
        "correct_arguments",
      ],
      ["HTTP 502: could not parse request body", "invalid_argument", "correct_arguments"],
      ["Request timed out after 20 s", "timeout", "retry_dependency"],
      ["HTTP 500: invalid response from upstream", "upstream_error", "retry_dependency"],
    ]);
  });

  it("identity checks, required reviews, money the account lacks and sizes over the plan stop", () => {
    expectCases([
      ["Identity verification is still pending for this account", "person_required", "stop"],
      ["Please complete KYC before sending payouts", "person_required", "stop"],
      ["Cannot merge: 1 approving review is required", "not_approved", "stop"],
      ["This change requires two approvals", "not_approved", "stop"],
      ["Insufficient collateral for the loan", "quota_exceeded", "stop"],
      ["Order total of 9,400 exceeds your available balance", "quota_exceeded", "stop"],
      ["Video is too long for your current plan", "quota_exceeded", "stop"],
      ["The upload is too large (max 25 MB)", "invalid_argument", "correct_arguments"],
      ["Field 'reviewers' is required", "invalid_argument", "correct_arguments"],
    ]);
  });

  it("gRPC's canonical codes decide where the description says nothing a rule reads", () => {
    expectCases([
      ["rpc error: code = Unimplemented desc = method Export", "not_supported", "switch_tool"],
      [
        "12 UNIMPLEMENTED: The server does not implement the method",
        "not_supported",
        "switch_tool",
      ],
      ["rpc error: code = Internal desc = stream reset", "upstream_error", "retry_dependency"],
      ["rpc error: code = Unknown desc = unexpected EOF", "upstream_error", "retry_dependency"],
      [
        "rpc error: code = OutOfRange desc = offset past end",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "rpc error: code = Unknown desc = index metrics not found",
        "not_found",
        "correct_arguments",
      ],
      ["rpc error: code = Internal desc = caller lacks role editor", "forbidden", "stop"],
    ]);
  });

  it("a lockout after failed sign-in attempts stops, whatever it says of trying again", () => {
    expectCases([
      ["Too many failed attempts. Try again in 10 minutes.", "unauthorized", "stop"],
      ["Too many unsuccessful sign-in attempts", "unauthorized", "stop"],
      ["Too many login attempts, please try later", "unauthorized", "stop"],
      ["Too many requests, try again in 10 minutes", "rate_limited", "retry_dependency"],
    ]);
  });

  it("a conflict with another operation still running waits; 'could not be found' is not found", () => {
    expectCases([
      [
        "Cannot scale: conflicts with an ongoing upgrade of the cluster",
        "unavailable",
        "retry_dependency",
      ],
      ["Please wait for the previous backup to finish", "unavailable", "retry_dependency"],
      ["Name conflicts with an existing bucket", "conflict", "correct_arguments"],
      ["The dashboard could not be found", "not_found", "correct_arguments"],
      ["Workspace couldn't be located", "not_found", "correct_arguments"],
    ]);
  });

  it("credentials not found, and a page structure that changed under a scraper, stop", () => {
    expectCases([
      ["Authentication not found. Sign in first.", "unauthorized", "stop"],
      ["API key not found in the keychain", "unauthorized", "stop"],
      ["Selector not found: the site layout may have changed", "misconfigured", "stop"],
      ["Post not found", "not_found", "correct_arguments"],
    ]);
  });

  it("a file another program holds, an application not installed, and more ways to say not found", () => {
    expectCases([
      [
        "The process cannot access the file 'C:\\data\\a.xlsx' because it is being used by another process.",
        "unavailable",
        "retry_dependency",
      ],
      [
        "Retrieving the COM class factory failed: 80040154 Class not registered",
        "misconfigured",
        "stop",
      ],
      ["The column 'Region' of the table wasn't found", "not_found", "correct_arguments"],
      ["Unknown action 'archive-all'", "not_found", "correct_arguments"],
      ["Type mismatch in argument 'start'", "invalid_argument", "correct_arguments"],
    ]);
  });

  it("a feature off for the account, and TLS trust the host lacks, stop", () => {
    expectCases([
      ["Exports are temporarily unavailable for your organization", "forbidden", "stop"],
      ["Scheduling is disabled for this workspace", "forbidden", "stop"],
      ["request failed: self-signed certificate in certificate chain", "misconfigured", "stop"],
      ["[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "misconfigured", "stop"],
      ["connect failed: CERT_HAS_EXPIRED", "misconfigured", "stop"],
    ]);
  });
});

describe("classifyHttpStatus", () => {
  it("maps statuses to classifications", () => {
    expect(classifyHttpStatus(429)).toEqual({
      reason: "rate_limited",
      action: "retry_dependency",
      certainty: "failed",
    });
    expect(classifyHttpStatus(503)).toMatchObject({
      action: "retry_dependency",
      certainty: "failed",
    });
    expect(classifyHttpStatus(502)).toMatchObject({
      action: "retry_dependency",
      certainty: "unknown",
    });
    expect(classifyHttpStatus(504)).toMatchObject({
      action: "retry_dependency",
      certainty: "unknown",
    });
    expect(classifyHttpStatus(500)).toMatchObject({
      action: "retry_dependency",
      certainty: "unknown",
    });
    expect(classifyHttpStatus(401)).toMatchObject({ reason: "unauthorized", action: "stop" });
    expect(classifyHttpStatus(403)).toMatchObject({ reason: "forbidden", action: "stop" });
    expect(classifyHttpStatus(402)).toMatchObject({ reason: "quota_exceeded", action: "stop" });
    expect(classifyHttpStatus(404)).toMatchObject({
      reason: "not_found",
      action: "correct_arguments",
    });
    expect(classifyHttpStatus(400)).toMatchObject({ reason: "invalid_argument" });
    expect(classifyHttpStatus(422)).toMatchObject({ reason: "invalid_argument" });
    expect(classifyHttpStatus(409)).toMatchObject({
      reason: "conflict",
      action: "correct_arguments",
    });
    expect(classifyHttpStatus(501)).toMatchObject({
      reason: "not_supported",
      action: "switch_tool",
    });
    expect(classifyHttpStatus(408)).toMatchObject({
      reason: "timeout",
      action: "retry_dependency",
      certainty: "unknown",
    });
  });

  it("falls back to the status class, and ignores non-errors", () => {
    expect(classifyHttpStatus(432)).toMatchObject({ action: "correct_arguments" });
    expect(classifyHttpStatus(599)).toMatchObject({
      action: "retry_dependency",
      certainty: "unknown",
    });
    for (const status of [200, 204, 302, 399, 600, 0, -1, 404.5, Number.NaN]) {
      expect(classifyHttpStatus(status)).toBeUndefined();
    }
  });

  it("agrees with REASONS", () => {
    for (let status = 400; status < 600; status++) {
      const c = classifyHttpStatus(status);
      expect(c && REASONS[c.reason]).toBe(c?.action);
    }
  });
});

interface CorpusEntry {
  readonly id: string;
  readonly text: string;
  readonly label: Action;
  readonly ambiguous: boolean;
}

interface ProtocolEntry {
  readonly id: string;
  readonly message: string;
}

function readJsonl<T>(name: string): T[] {
  const url = new URL(`../../../../test/corpus/${name}`, import.meta.url);
  return readFileSync(url, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
}

// The whole classifier on the text of an isError result, as `governor classify` judges a text line.
const corpusTool = resolveToolPolicy(loadPolicy({}), "tool");
const predict = (text: string): Action =>
  classify(failureFromResult({ content: [{ type: "text", text }], isError: true }), corpusTool)
    .action;

describe("corpus", () => {
  const entries = readJsonl<CorpusEntry>("tool-errors.jsonl");

  it("classifies at least 90% of the non-ambiguous entries right", () => {
    const clear = entries.filter((e) => !e.ambiguous);
    expect(clear.length).toBeGreaterThan(100);
    const wrong = clear.filter((e) => predict(e.text) !== e.label);
    const accuracy = 1 - wrong.length / clear.length;
    const detail = wrong.map((e) => `${e.id}: ${e.label} -> ${predict(e.text)}`).join("\n");
    expect(
      accuracy,
      `accuracy ${accuracy.toFixed(3)}; misclassified:\n${detail}`,
    ).toBeGreaterThanOrEqual(0.9);
  });

  it("never retries a failure labelled stop", () => {
    const offenders = entries
      .filter((e) => e.label === "stop" && predict(e.text) === "retry_dependency")
      .map((e) => e.id);
    expect(offenders, `stop entries predicted retry_dependency: ${offenders.join(", ")}`).toEqual(
      [],
    );
  });

  it("recognizes every unknown-tool message of the protocol corpus", () => {
    const unknownTool = readJsonl<ProtocolEntry>("protocol-errors.jsonl").filter(
      (e) => /\btool\b/i.test(e.message) && /\b(?:not found|unknown)\b/i.test(e.message),
    );
    expect(unknownTool.length).toBeGreaterThanOrEqual(3);
    for (const entry of unknownTool) {
      const rule = matchBuiltinRules(stripMcpPrefix(entry.message));
      expect({ id: entry.id, reason: rule?.reason }).toEqual({
        id: entry.id,
        reason: "unknown_tool",
      });
    }
  });
});

// Phrasings written for these tests (issue 27.3), not taken from any corpus: each a general way a
// service says only a person can fix it, with no status code to go on.
describe("issue 27.3: person-only cues", () => {
  it("a missing permission scope an administrator must grant stops", () => {
    expectCases([
      ["The token is missing the `channels:history` scope.", "forbidden", "stop"],
      ["Missing required scope: read:org", "forbidden", "stop"],
      ["This integration requires the 'files.write' scope", "forbidden", "stop"],
      ["Scope 'admin:webhooks' is not granted for this installation", "forbidden", "stop"],
      ["An administrator must approve this app before it can read mail", "forbidden", "stop"],
      ["Your workspace admin needs to grant access to this connector", "forbidden", "stop"],
    ]);
  });

  it("a mode or a policy that restricts the caller stops", () => {
    expectCases([
      ["Writes are disabled in safe mode", "forbidden", "stop"],
      ["The server is running in view-only mode", "forbidden", "stop"],
      ["Export is blocked by your organization's security settings", "forbidden", "stop"],
      ["Workspace policy prohibits sharing files outside the domain", "forbidden", "stop"],
    ]);
  });

  it("a confirmation nobody gave stops; the model must not give it", () => {
    expectCases([
      ["This operation requires explicit user confirmation", "not_approved", "stop"],
      [
        "Deletion has not been confirmed yet. Pass confirm: true once the owner agrees",
        "not_approved",
        "stop",
      ],
      ["Transfer awaiting approval from the account holder", "not_approved", "stop"],
    ]);
  });

  it("credentials rejected or missing, in words, stop", () => {
    expectCases([
      ["Your credentials were rejected by the server", "unauthorized", "stop"],
      ["Authentication attempt was unsuccessful", "unauthorized", "stop"],
      ["No API key was provided with the request", "unauthorized", "stop"],
      ["The request signature does not match the one computed", "unauthorized", "stop"],
    ]);
  });

  it("a plan, a payment or a budget spent stops as a quota", () => {
    expectCases([
      ["Your subscription is past due; update the payment method", "quota_exceeded", "stop"],
      ["The card was declined", "quota_exceeded", "stop"],
      ["Your plan does not include scheduled exports", "quota_exceeded", "stop"],
      ["You have exceeded your plan's monthly request limit", "quota_exceeded", "stop"],
      ["The session budget has been exhausted", "quota_exceeded", "stop"],
      ["Spending cap reached for this project", "quota_exceeded", "stop"],
      ["You have used up your monthly allowance", "quota_exceeded", "stop"],
    ]);
  });

  it("an account or workspace state, and a text that sends the agent to a person, stop as person_required", () => {
    expectCases([
      ["The merchant account is on hold pending review", "person_required", "stop"],
      ["This workspace has not been activated yet", "person_required", "stop"],
      ["Please ask the user which calendar to use", "person_required", "stop"],
      [
        "Refunds above 500 EUR need a manager's sign off. Contact the finance team.",
        "person_required",
        "stop",
      ],
      [
        "Orders cannot be changed after dispatch; contact your account manager",
        "person_required",
        "stop",
      ],
      ["Only workspace owners can rename channels", "person_required", "stop"],
      ["Contact support to unlock exports", "person_required", "stop"],
    ]);
  });

  it("more ways to say it: admins, installs, sign-in, plans, seats, confirmations, the user", () => {
    expectCases([
      ["Your administrator has disabled file sharing", "forbidden", "stop"],
      ["This action requires admin privileges", "forbidden", "stop"],
      ["The app is not installed in this workspace", "forbidden", "stop"],
      ["Exports are disabled for this environment", "forbidden", "stop"],
      ["Re-run with force: true to delete the branch", "not_approved", "stop"],
      ["You must be logged in to use this endpoint", "unauthorized", "stop"],
      ["Could not validate credentials", "unauthorized", "stop"],
      ["Please connect your Google account first", "unauthorized", "stop"],
      ["You have reached the usage limit for this billing period", "quota_exceeded", "stop"],
      ["Upgrade to a Team plan to use webhooks", "quota_exceeded", "stop"],
      ["This workspace is on the free plan", "quota_exceeded", "stop"],
      ["There is an outstanding balance on this account", "quota_exceeded", "stop"],
      ["No seats available in this organization", "quota_exceeded", "stop"],
      ["The organization has been deactivated", "person_required", "stop"],
      ["The user must approve the request in the mobile app", "person_required", "stop"],
      ["This change requires manual review", "person_required", "stop"],
    ]);
  });

  it("flags and modes only an operator sets, rights by level, access revoked, consent", () => {
    expectCases([
      ["Deleting buckets requires the --allow-destructive flag", "forbidden", "stop"],
      ["Start the server with --allow_writes to enable this tool", "forbidden", "stop"],
      ["This command only works in admin mode", "forbidden", "stop"],
      ["Write operations are disabled on this connection", "forbidden", "stop"],
      ["You must have admin rights on the repository", "forbidden", "stop"],
      ["You must be an owner of the project to transfer it", "forbidden", "stop"],
      ["The token does not have the required scopes", "forbidden", "stop"],
      ["Admin permission required", "forbidden", "stop"],
      ["This model is unavailable in your region", "forbidden", "stop"],
      ["Exporting requires the Billing Manager role", "forbidden", "stop"],
      ["Permissions are required to publish", "forbidden", "stop"],
      ["Destructive operation blocked on this server", "forbidden", "stop"],
      ["Access to this mailbox has been revoked", "forbidden", "stop"],
      ["The tenant has not consented to the application", "forbidden", "stop"],
      ["Admin consent is needed for Files.ReadWrite.All", "forbidden", "stop"],
      ["token scope insufficient for this call", "forbidden", "stop"],
    ]);
  });

  it("credentials not taken and second factors, in words, stop", () => {
    expectCases([
      ["not_authed", "unauthorized", "stop"],
      ["AuthFailure: the request could not be verified", "unauthorized", "stop"],
      ["Two-factor authentication is required for this account", "unauthorized", "stop"],
      ["The access token you sent is no longer valid", "unauthorized", "stop"],
      ["API key not recognised by the gateway", "unauthorized", "stop"],
      ["Authorization header is missing", "unauthorized", "stop"],
      ["This endpoint requires authentication", "unauthorized", "stop"],
      ["Invalid signature for this request", "unauthorized", "stop"],
      ["Invalid session, please sign in", "unauthorized", "stop"],
      ["You must be authenticated to list invoices", "unauthorized", "stop"],
    ]);
  });

  it("a payment or order in a state no argument changes stops", () => {
    expectCases([
      ["This charge has already been refunded", "business_rule", "stop"],
      ["The invoice is already finalized and cannot be edited", "business_rule", "stop"],
      ["Order already shipped", "business_rule", "stop"],
      ["Cannot edit a published post", "business_rule", "stop"],
      ["Unable to modify an archived project", "business_rule", "stop"],
    ]);
  });

  it("projects and stores on hold, actions only a person takes, terms and pending approvals", () => {
    expectCases([
      ["The project is paused; restore it to run queries", "person_required", "stop"],
      ["Store has been suspended by the platform", "person_required", "stop"],
      ["PAYER_ACTION_REQUIRED", "person_required", "stop"],
      ["User interaction required to continue", "person_required", "stop"],
      [
        "Please accept the updated terms of service before using the API",
        "person_required",
        "stop",
      ],
      ["The license agreement has not been accepted", "person_required", "stop"],
      ["The integration is not approved", "person_required", "stop"],
      ["The change is awaiting review by a workspace admin", "person_required", "stop"],
      ["Messages cannot be sent to unverified phone numbers", "person_required", "stop"],
      ["Email address not confirmed", "person_required", "stop"],
      ["Trial accounts can only message verified recipients", "person_required", "stop"],
      ["Webhooks can only be configured in the dashboard", "person_required", "stop"],
      ["Request declined.", "person_required", "stop"],
      ["Export cancelled.", "person_required", "stop"],
    ]);
    // A Go context cancelled by the caller is no person's decision.
    expect(matchBuiltinRules("context canceled")?.reason).not.toBe("person_required");
  });

  it("budgets of a session or a run, and allowances used, stop as a quota", () => {
    expectCases([
      ["The conversation tool-call limit has been reached", "quota_exceeded", "stop"],
      ["You have used all of your monthly searches", "quota_exceeded", "stop"],
      ["Maximum number of tool calls per session reached", "quota_exceeded", "stop"],
      ["No active subscription for this workspace", "quota_exceeded", "stop"],
      ["You have hit your spending limit", "quota_exceeded", "stop"],
      ["Rate limit exceeded for the free tier", "quota_exceeded", "stop"],
      ["Audit logs are an enterprise-only feature", "quota_exceeded", "stop"],
      ["SSO isn't included in your current plan", "quota_exceeded", "stop"],
      ["Maximum number of projects reached for your plan", "quota_exceeded", "stop"],
    ]);
  });

  it("an operation this deployment, version or API does not offer switches tool", () => {
    expectCases([
      ["Change streams are not supported on this deployment", "not_supported", "switch_tool"],
      ["This server version does not support transactions", "not_supported", "switch_tool"],
      ["$search requires version 7.0 or later of the server", "not_supported", "switch_tool"],
      ["Bulk export is not available via the API", "not_supported", "switch_tool"],
      ["Vector indexes are only available on dedicated clusters", "not_supported", "switch_tool"],
      ["Operation 'merge' is not supported", "not_supported", "switch_tool"],
      ["Feature no longer available", "not_supported", "switch_tool"],
      ["This endpoint has been deprecated; use v2", "not_supported", "switch_tool"],
      ["method tools/rename not implemented", "not_supported", "switch_tool"],
    ]);
  });

  it("transient states of the dependency, in words, retry", () => {
    expectCases([
      ["Circuit breaker is open for the billing backend", "unavailable", "retry_dependency"],
      ["The API is undergoing scheduled maintenance", "unavailable", "retry_dependency"],
      ["Writes are not available during maintenance mode", "unavailable", "retry_dependency"],
      ["We are experiencing unusually high demand", "unavailable", "retry_dependency"],
      ["Insufficient capacity in the requested zone", "unavailable", "retry_dependency"],
      ["The cluster is still being provisioned", "unavailable", "retry_dependency"],
      ["Search index not ready yet", "unavailable", "retry_dependency"],
      ["no healthy upstream", "unavailable", "retry_dependency"],
      ["SocketError: other side closed", "connection_closed", "retry_dependency"],
    ]);
  });

  it("argument wording near the new cues stays the model's", () => {
    expectCases([
      ["Invalid value for 'allow': expected a list", "invalid_argument", "correct_arguments"],
      ["Field 'terms' is required", "invalid_argument", "correct_arguments"],
      ["Field 'permissions' is required", "invalid_argument", "correct_arguments"],
      ["session_id is required", "invalid_argument", "correct_arguments"],
      ["Session id not found", "not_found", "correct_arguments"],
      ["Value for 'version' is not supported", "invalid_argument", "correct_arguments"],
      ["Order ORD-7 already exists", "conflict", "correct_arguments"],
      ["Cannot find a published version with id v9", "not_found", "correct_arguments"],
    ]);
  });

  it("a transient failure that mentions support, or a plain argument error, is not person-only", () => {
    expectCases([
      [
        "Service temporarily unavailable. If the problem persists, contact your administrator",
        "unavailable",
        "retry_dependency",
      ],
      ["Internal error. Please contact support", "upstream_error", "retry_dependency"],
      ["Invalid date format; expected YYYY-MM-DD", "invalid_argument", "correct_arguments"],
      ["The user was not found in this workspace", "not_found", "correct_arguments"],
      ["Request timed out, try again later", "unavailable", "retry_dependency"],
      ["Rate limit exceeded for this session, retry shortly", "rate_limited", "retry_dependency"],
      ["Retry with force: false is not a valid option", "invalid_argument", "correct_arguments"],
    ]);
  });

  it("credentials the service does not know, a signature it refuses, credentials the server cannot load", () => {
    expectCases([
      ["The access key ID you provided does not exist in our records.", "unauthorized", "stop"],
      ["Client ID is not recognized by the identity provider", "unauthorized", "stop"],
      [
        "The request signature we calculated does not match the signature you provided.",
        "unauthorized",
        "stop",
      ],
      ["Webhook signature mismatch", "unauthorized", "stop"],
      ["Signature expired: the request is older than 15 minutes", "unauthorized", "stop"],
      ["Unable to load credentials from any provider in the chain", "unauthorized", "stop"],
      ["Failed to refresh OAuth credentials", "unauthorized", "stop"],
      [
        "No authenticated accounts available. Please run authentication first.",
        "unauthorized",
        "stop",
      ],
      ["Please log in first", "unauthorized", "stop"],
    ]);
  });

  it("a host clock too far off, a problem with the account, a wait for a person that ran out", () => {
    expectCases([
      ["RequestTimeTooSkewed: the clock of the client is too far off", "misconfigured", "stop"],
      [
        "The difference between the request time and the server time is too large.",
        "misconfigured",
        "stop",
      ],
      ["There is a problem with your account. Contact support.", "person_required", "stop"],
      ["Timed out waiting for the user to approve the transfer", "person_required", "stop"],
      ["Gave up waiting for confirmation after 120 seconds", "not_approved", "stop"],
      ["The approval request has expired", "person_required", "stop"],
      ["Access to this bucket has been disabled", "forbidden", "stop"],
      ["Domain policy has disabled sharing outside the company", "forbidden", "stop"],
    ]);
  });

  it("recipients who opted out or were suppressed, and limits that reset tomorrow or later", () => {
    expectCases([
      ["Attempt to send to an unsubscribed recipient", "business_rule", "stop"],
      ["The address has been suppressed after a hard bounce", "business_rule", "stop"],
      ["Recipient opted out of SMS messages", "business_rule", "stop"],
      ["Cannot message inactive recipients", "business_rule", "stop"],
      ["Sending paused. Try again tomorrow.", "quota_exceeded", "stop"],
      ["Your credits reset on the first of next month", "quota_exceeded", "stop"],
      ["You have reached the export limit for today", "quota_exceeded", "stop"],
    ]);
  });

  it("a right named by who holds it or by what the key may do, and counts a plan allows, stop", () => {
    expectCases([
      ["Only the owner of this resource can delete it", "forbidden", "stop"],
      ["Publishing is restricted to workspace admins", "forbidden", "stop"],
      ["This API key is read-only", "forbidden", "stop"],
      ["Your API token does not have write access", "forbidden", "stop"],
      ["The resource is locked by an administrator", "forbidden", "stop"],
      ["Your IP address is not on the allowlist", "forbidden", "stop"],
      ["Organization has exceeded the number of allowed seats", "quota_exceeded", "stop"],
      ["Project limit reached for your workspace", "quota_exceeded", "stop"],
      [
        "You have reached the maximum number of active projects allowed on your plan",
        "quota_exceeded",
        "stop",
      ],
    ]);
  });

  it("a step only the user can take that they did not finish, and more plan and session states, stop", () => {
    expectCases([
      ["Request timed out waiting for the OTP code", "person_required", "stop"],
      ["Deadline exceeded while waiting for manager approval", "person_required", "stop"],
      ["Timeout: the user did not complete the 3-D Secure challenge", "person_required", "stop"],
      [
        "Authentication timed out. The user did not respond to the push notification",
        "person_required",
        "stop",
      ],
      [
        "Connection reset by peer. The session was revoked by an administrator",
        "unauthorized",
        "stop",
      ],
      ["Please retry after verifying your phone number", "unauthorized", "stop"],
      ["503: The API is not available for free accounts", "quota_exceeded", "stop"],
      [
        "429 Too Many Requests: you have exceeded the number of requests allowed by your subscription",
        "quota_exceeded",
        "stop",
      ],
      ["Too many requests: daily cap reached, resets at 00:00 UTC", "quota_exceeded", "stop"],
    ]);
  });

  it("argument and transient wording near those cues keeps its class", () => {
    expectCases([
      ["The specified key does not exist.", "not_found", "correct_arguments"],
      ["API key name must be unique", "invalid_argument", "correct_arguments"],
      ["Checksum does not match the uploaded content", "conflict", "correct_arguments"],
      ["Rate limit exceeded; the limit resets in 30 seconds", "rate_limited", "retry_dependency"],
      ['Timed out waiting for selector "#submit"', "not_found", "correct_arguments"],
      ["Timed out waiting for the database to respond", "timeout", "retry_dependency"],
      ["Deadline exceeded while waiting for the database lock", "timeout", "retry_dependency"],
      ["Please reduce your request rate.", "rate_limited", "retry_dependency"],
      [
        "Rate limit exceeded for your account, retry in 2 seconds",
        "rate_limited",
        "retry_dependency",
      ],
      ["Record is locked by another user", "unavailable", "retry_dependency"],
      [
        "Domain cdn.example.com is not in the allowed domains list",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "Access denied: path traversal detected in '../../etc/passwd'",
        "invalid_argument",
        "correct_arguments",
      ],
    ]);
  });
});

// The labelling guideline's decisions (test/blind/README.md, "decided here"), in phrasings written
// for these tests: a limit the database or API names, and a rate window longer than a minute.
describe("issue 27: the guideline's limits and windows", () => {
  it("a time limit the database names is corrected (a narrower query), a bare timeout retried", () => {
    expectCases([
      [
        "ERROR: canceling statement due to statement timeout",
        "invalid_argument",
        "correct_arguments",
      ],
      ["query aborted: statement_timeout reached", "invalid_argument", "correct_arguments"],
      [
        "Query was interrupted: maximum execution time exceeded",
        "invalid_argument",
        "correct_arguments",
      ],
      [
        "Error 3024: query exceeded the maximum execution time of 30000 ms",
        "invalid_argument",
        "correct_arguments",
      ],
      ["Timeout while waiting for the database", "timeout", "retry_dependency"],
      ["The request timed out", "timeout", "retry_dependency"],
    ]);
  });

  it("a rate window longer than a minute stops, one of a minute or less is waited out", () => {
    expectCases([
      ["Rate limit exceeded: 500 requests per hour", "quota_exceeded", "stop"],
      ["You reached the hourly limit of 60 exports", "quota_exceeded", "stop"],
      ["Too many requests: the limit is 20 per week for this key", "quota_exceeded", "stop"],
      ["Rate limit exceeded: 50 requests per minute", "rate_limited", "retry_dependency"],
      ["Too many requests, limit of 5 per second", "rate_limited", "retry_dependency"],
      ["Rate limit exceeded, try again in an hour", "rate_limited", "retry_dependency"],
    ]);
  });
});
