import { describe, expect, it } from "vitest";
import { hasNestedUnboundedQuantifier } from "../../../../test/support/regex-safety.ts";
import { fingerprint, normalizeText } from "./fingerprint.ts";
import { FOLD_PATTERNS, foldArgumentValues, foldValues } from "./fingerprint-fold.ts";

const print = (text: string, tool = "t") => fingerprint({ tool, channel: "tool", text });
const same = (a: string, b: string) => expect(print(a)).toBe(print(b));
const apart = (a: string, b: string) => expect(print(a)).not.toBe(print(b));

// Phrasings written for these tests (issue 27.5), not taken from the corpus.
describe("foldValues: one template, values of any shape", () => {
  it("a name as a word, a slug, a quoted value or a number is one value", () => {
    same("Table orders is locked", "Table customer_events_v2 is locked");
    same("Unknown tool: search", "Unknown tool: 'web-search'");
  });

  it("a list of values reads as one, whatever its length", () => {
    same("Unknown field 'x'. Must be one of: name, email", "Unknown field 'y'. Must be one of: id");
    same("Value not in red, green, blue", "Value not in north, south");
    same("no such index [logs-a, logs-b]", "no such index [metrics]");
  });

  it("the one word a condition is about, after a colon or at the start, is a value", () => {
    same(
      "Access refused: reports not in the allowed list",
      "Access refused: drafts not in the allowed list",
    );
    same("staging does not exist", "production does not exist");
    same(
      "call[find] query missing required argument",
      "call[find] offset missing required argument",
    );
    same(
      "invalid summarization engine set: gpt4. Try again",
      "invalid summarization engine set: cecil. Try again",
    );
    same("Unable to parse range: orders", "Unable to parse range: invoices");
    same(
      "Symlink outside allowed directories: x not in read, write",
      "Symlink outside allowed directories: x not in admin",
    );
    // Words of the sentence or of error vocabulary are not values.
    apart("Permission denied: read", "Permission denied: write");
    apart("Upload failed: timeout must be set", "Upload failed: quota must be set");
  });

  it("quoted upstream messages and numeric codes keep two failures apart", () => {
    apart('Request failed: "Rate limit exceeded"', 'Request failed: "Invalid API key"');
    apart(
      '{"error": {"code": 40301, "message": "Forbidden"}}',
      '{"error": {"code": 40101, "message": "Unauthorized"}}',
    );
    apart('{"status": 403}', '{"status": 404}');
    same('Export failed: "Quarterly Report"', 'Export failed: "Yearly Plan"');
  });

  it("a duration with its unit is one value", () => {
    same("Query timed out after 30s", "Query timed out after 1.5 seconds");
    same("Retry in 250 ms", "Retry in 2 minutes");
  });

  it("names read from their context: after a network code, in an operation, an error's subject", () => {
    same("connect ECONNREFUSED elasticsearch", "connect ECONNREFUSED opensearch-node-2");
    same(
      "dial tcp: lookup postgres on 127.0.0.11:53: no such host",
      "dial tcp: lookup db-primary.internal on 10.0.0.2:53: no such host",
    );
    same(
      "An error occurred (ThrottlingException) when calling the PutItem operation",
      "An error occurred (ThrottlingException) when calling the Query operation",
    );
    same(
      "Error running backfill: server selection timed out",
      "Error running ingest: server selection timed out",
    );
    same("Tool search is disabled", "Tool browse is disabled");
    same("open notes: permission denied", "open /srv/data/notes.md: permission denied");
    same(
      "unique constraint failed: users.email_address",
      "unique constraint failed: orders.order_ref",
    );
  });

  it("a name between the noun of its kind and a phrase of absence is a value", () => {
    same(
      "Texture oak_floor not found, download it first",
      "Texture Marble not found, download it first",
    );
    same("collection orders does not exist", "collection invoices does not exist");
    same("Profile walking is unavailable", "Profile cycling is unavailable");
    // The kind stays: two kinds of thing are two failures; a function word is no kind.
    apart("collection orders does not exist", "database orders does not exist");
    apart("the user does not exist", "the project does not exist");
  });

  it("a name after more nouns of its kind is a value; the noun and an adverb stay", () => {
    same("Environment staging is paused", "Environment prod-eu-2 is paused");
    same("Format xlsx is not supported", "Format parquet is not supported");
    same("Workflow deploy failed on step build", "Workflow release failed on step lint");
    same("Missing parameter cursor", "Missing parameter page_token");
    // `the X environment variable` is read before `environment X`.
    same("set the ALPHA environment variable", "set the beta environment variable");
    apart("Environment staging is paused", "Workspace staging is paused");
    apart("Service temporarily unavailable", "Service permanently unavailable");
    // A state of the thing is no name.
    apart("Cannot delete branch main: protected", "Cannot delete branch main: checked");
  });

  it("a word in a value position: after invalid and its kind, after found for, in an error's verb", () => {
    same("Invalid currency XYZ", "Invalid currency eur");
    same("Unknown timezone Mars/Olympus", "Unknown timezone utc");
    same("No results found for sales", "No results found for q3-report");
    same("Access denied to sales", "Access denied to payroll");
    same("Failed to fetch orders: connection reset", "Failed to fetch invoices: connection reset");
    same("No workspace found with slug alpha", "No workspace found with slug beta-2");
    same("Currency xyz is not supported", "Currency jpy is not supported");
    // The error's subject at any place: the text before it may be longer in one occurrence.
    same(
      'Sync "a" and "b" failed; error running backfill: timed out',
      'Sync "c" failed; error running ingest: timed out',
    );
    // Nouns of the template are no value; a kind alone is the subject, kept.
    apart("Invalid api key", "Invalid api version");
    apart("Invalid request body", "Invalid request header");
    apart("Collection not found: orders", "Table not found: orders");
    apart("No results found for sales", "No permission found for sales");
  });

  it("a capitalized word inside a sentence is a proper name, its case aside", () => {
    same("Sheet Budget has no rows", "Sheet Forecast has no rows");
    same("This tool needs a Firecrawl account.", "This tool needs a Tavily account.");
    same("Enable the Drive API for your project", "Enable the Sheets API for your project");
    // Error vocabulary, prose, months and words of a path are not names.
    apart("Request failed: Not Found", "Request failed: Forbidden");
    apart(
      "stat /data/Quarterly Report.xlsx: no such file",
      "stat /data/Quarterly Report.xlsx: permission denied",
    );
    expect(normalizeText("failed on Mon, 15 Jan 2024 10:30:00 GMT")).toBe("failed on <time>");
    // In capitals too, an acronym, a system error code and the words of a query aside.
    same("The amount must be at least INR 1.00", "The amount must be at least USD 0.50");
    apart("connect ECONNREFUSED db", "connect ETIMEDOUT db");
    apart("The API rejected it", "The SDK rejected it");
    apart("syntax error in SELECT", "syntax error in DELETE");
  });

  it("a host and its port, a sheet and its range, a negative number and what a parser got are values", () => {
    same("Could not connect to db.internal:5432", "Could not connect to localhost:5432");
    same("Error reading sheet Q3_Budget!A1:C5", "Error reading sheet Summary!D4:E9");
    same("Point exclusions (point(-122.4 37.7))", "Point exclusions (point(13.4 52.5))");
    same("Expected one of [a, b], got c", "Expected one of [a, b], got dd");
    same("Unknown model gpt9. Did you mean gpt4?", "Unknown model claude. Did you mean claude-3?");
    same("Invalid sort. Valid values are asc, desc.", "Invalid sort. Valid values are newest.");
    same("syntax error at or near limt", "syntax error at or near grop");
    // A type is no value: `received number` and `received string` stay apart.
    apart("expected string, received number", "expected string, received object");
  });

  it("a JSON error body wrapping the same text shares it too", () => {
    const wrap = (t: string, id: string) =>
      JSON.stringify({ error: { message: t, request_id: id } });
    same(
      wrap("permission denied for table prod_logs", "req_1"),
      wrap("permission denied for table orders", "req_2"),
    );
  });

  it("a status in prose or in quotes, and a one-word upstream message, keep failures apart", () => {
    apart("Request failed: 404", "Request failed: 500");
    apart("API error (404): see docs", "API error (500): see docs");
    apart("Server responded with 502", "Server responded with 503");
    apart("The API responded with a 404 status", "The API responded with a 409 status");
    apart('{"status": "404"}', '{"status": "500"}');
    apart('{"error": {"code": "E1045"}}', '{"error": {"code": "E2002"}}');
    apart('{"message": "TooManyRequests"}', '{"message": "NoSuchBucket"}');
    apart('{"errorType": "ResourceExhausted"}', '{"errorType": "ValidationException"}');
    // A count that happens to be 4xx is a value: it is followed by its noun, or has no lead.
    same("Sync failed with 404 items pending", "Sync failed with 12 items pending");
    same("accepts at most 500 terms", "accepts at most 450 terms");
    same("got 503", "got 504");
  });

  it("JSON encoded twice reads as JSON: its codes and messages stay, its values fold", () => {
    const twice = (body: object) => `Upstream said: ${JSON.stringify(JSON.stringify(body))}`;
    apart(
      twice({ error: "invalid_grant", error_description: "Bad Request" }),
      twice({ error: "invalid_client", error_description: "Bad Request" }),
    );
    // One body, encoded once or twice inside a wrapper, is one template with its values folded.
    same(
      twice({ errors: [{ message: "orders was not confirmed; no changes were made." }] }),
      twice({ errors: [{ message: "invoices was not confirmed; no changes were made." }] }),
    );
    apart('{"statusMessage": "Bad Gateway"}', '{"statusMessage": "Gateway Timeout"}');
    apart('{"errors": ["Name can\'t be blank"]}', '{"errors": ["Name must be unique"]}');
    apart('{"errorCode": "E0000011"}', '{"errorCode": "E0000007"}');
    apart('{"error": {"code": 7, "message": "x"}}', '{"error": {"code": 8, "message": "x"}}');
    apart('{"__type": "ResourceNotFoundException"}', '{"__type": "ThrottlingException"}');
    apart(
      '{"name": "ValidationError", "message": "bad input"}',
      '{"name": "AuthError", "message": "bad input"}',
    );
    same(
      '{"name": "orders", "message": "bad input"}',
      '{"name": "invoices", "message": "bad input"}',
    );
    apart('Upstream said: "Conflict"', 'Upstream said: "Forbidden"');
    // A noun a condition is about is no name at the start of a text.
    apart("user is not authorized", "token is not authorized");
  });

  it("a status after a failure's colon, a URL or a `status was`, or opening the text, stays", () => {
    apart("Failed to fetch: 404", "Failed to fetch: 503");
    apart("GET https://api.example.com/v1/x 502", "GET https://api.example.com/v1/x 504");
    apart("the response status was 503", "the response status was 429");
    apart('404: {"message": "x"}', '500: {"message": "x"}');
    same("failed to process 3 items: 404 remaining", "failed to process 3 items: 12 remaining");
  });

  it("error vocabulary and the words of a sentence are never values", () => {
    apart("Upload failed: timeout", "Upload failed: refused");
    apart("Tool search is disabled", "Tool search is deprecated");
    apart("connect ECONNREFUSED db", "connect ECONNRESET db");
    apart(
      "Error running backfill: server selection timed out",
      "Error running backfill: duplicate key",
    );
    apart("Value not in red, green", "Value not allowed");
    apart("Table orders is locked", "Table orders is missing");
    apart("open notes: permission denied", "open notes: no such file or directory");
  });

  it("leaves a normalized text without values as it is, and is idempotent", () => {
    const n = normalizeText("Service temporarily unavailable");
    expect(foldValues(n)).toBe(n);
    const v = normalizeText('No note with id "drafts" (took 31ms); tool: search');
    expect(foldValues(foldValues(v))).toBe(foldValues(v));
  });
});

describe("fingerprint with the call's arguments", () => {
  const withArgs = (text: string, args: Record<string, unknown>) =>
    fingerprint({ tool: "t", channel: "tool", text, args });

  it("a word of the text the call sent is its value", () => {
    expect(withArgs("cannot plot orders against itself", { series: "orders" })).toBe(
      withArgs("cannot plot invoices against itself", { series: "invoices" }),
    );
    expect(withArgs("Phase build depends on missing phase build", { phase: "build" })).toBe(
      withArgs("Phase lint depends on missing phase lint", { phase: "lint" }),
    );
    // Values in arrays and nested objects, and lists of words, too.
    expect(withArgs("cannot merge alpha", { refs: ["alpha"] })).toBe(
      withArgs("cannot merge beta", { refs: ["beta"] }),
    );
    expect(withArgs("blocked: orders, invoices", { x: { names: "orders, invoices" } })).toBe(
      withArgs("blocked: refunds", { x: { names: "refunds" } }),
    );
    // Without them, the same text as ever.
    expect(
      fingerprint({ tool: "t", channel: "tool", text: "cannot plot orders against itself" }),
    ).not.toBe(
      fingerprint({ tool: "t", channel: "tool", text: "cannot plot invoices against itself" }),
    );
  });

  it("the condition stays: vocabulary, other templates, and a text that is only the value", () => {
    // A value that is error vocabulary is not taken out (`{ state: "failed" }`).
    expect(withArgs("job failed", { state: "failed" })).not.toBe(
      withArgs("job cancelled", { state: "cancelled" }),
    );
    // Two templates with the same value stay two.
    expect(withArgs("table orders not found", { table: "orders" })).not.toBe(
      withArgs("column orders not found", { table: "orders" }),
    );
    // The answer is the value itself: nothing of the text would be left.
    expect(foldArgumentValues("quarterly report", ["quarterly report"])).toBe("quarterly report");
    expect(foldArgumentValues("no rows for quarterly report", ["quarterly report"])).toBe(
      "no rows for <v>",
    );
    // Whole words only, numbers aside.
    expect(foldArgumentValues("ordersync failed for 12345", ["orders", "12345"])).toBe(
      "ordersync failed for 12345",
    );
  });

  it("a letter outside the BMP (two UTF-16 units) continues a word as any other letter does", () => {
    // The value is whole where it stands alone; where a letter is glued to it (`заказы` for
    // `заказ`) it is part of another word, and that word stays: two such failures are apart.
    const glued = (value: string, letter: string) =>
      withArgs(`table ${value} not found; see ${value}${letter} and ${letter}${value}`, {
        table: value,
      });
    expect(glued("заказ", "ы")).not.toBe(glued("товар", "ы"));
    // Deseret, mathematical bold and CJK Extension B letters are each a surrogate pair: glued to
    // the value they are as much a part of the word.
    for (const letter of ["𐐫", "𝐝", "𠀄"]) {
      expect(glued("заказ", letter), letter).not.toBe(glued("товар", letter));
      expect(glued("𐐨𐐩𐐪", letter), letter).not.toBe(glued("𐐲𐐳𐐴", letter));
    }
    // Values made of such letters are read as the BMP's are: whole, they fold alike.
    expect(withArgs("table 𐐨𐐩𐐪 not found", { table: "𐐨𐐩𐐪" })).toBe(
      withArgs("table 𐐲𐐳𐐴 not found", { table: "𐐲𐐳𐐴" }),
    );
    expect(withArgs("no rows for 𝐚𝐛𝐜", { q: "𝐚𝐛𝐜" })).toBe(
      withArgs("no rows for 𝐱𝐲𝐳", { q: "𝐱𝐲𝐳" }),
    );
    // A value is long enough by its letters, not its UTF-16 units: one letter of a script
    // without case is no name (`东`), two are (`东京`), whatever plane they are in.
    expect(foldArgumentValues("no rows for 东 here", ["东"])).toBe("no rows for 东 here");
    expect(foldArgumentValues("no rows for 𠀀 here", ["𠀀"])).toBe("no rows for 𠀀 here");
    expect(foldArgumentValues("no rows for 𠀀𠀁 here", ["𠀀𠀁"])).toBe("no rows for <v> here");
    expect(foldArgumentValues("no rows for 𐐨𐐩 here", ["𐐨𐐩"])).toBe("no rows for 𐐨𐐩 here");
  });
});

// Phrasings written for these tests (issue 27.5, second pass), not taken from a set.
describe("values the first pass left apart", () => {
  it('a quoted double quote (`near """`) is one quoted value', () => {
    expect(normalizeText('syntax error at or near """')).toBe("syntax error at or near <str>");
    same('syntax error at or near """', 'syntax error at or near "LIMT"');
    // An empty string stays an empty string next to a value.
    expect(normalizeText('expected "" or "x"')).toBe("expected <str> or <str>");
    apart('syntax error at or near """', "syntax error at end of input");
  });

  it("an attribute's value in quotes is the value, one word or many", () => {
    same(
      'element resolved to <div class="form-row">…</div>',
      'element resolved to <div class="field field--text">…</div>',
    );
    expect(normalizeText('x <div class="a b">…</div> y')).toBe("x <div class=<v>>…<<path>> y");
    // Kept in its quotes as a condition's name, read as an identifier after: still the value.
    expect(foldValues('<div class="form-row">')).toBe("<div class=<v>>");
    expect(foldValues("<div class='form-row'>")).toBe("<div class=<v>>");
    // The tag is another template, and a status after `=` names the condition as ever.
    apart(
      'element resolved to <div class="form-row">…</div>',
      'element resolved to <input class="form-row">',
    );
    apart("request failed: status=503 <html>", "request failed: status=429 <html>");
  });
});

// Phrasings written for these tests (issue 27.5, second pass): each class of value, then the
// nearest other template, which must keep its own fingerprint.
describe("values by their place in a template", () => {
  it("the command a server refused or could not run is a value", () => {
    same(
      "Error: SELECT command denied to user 'a'@'h' for table 't'",
      "Error: DELETE command denied to user 'b'@'h' for table 'u'",
    );
    same("deploy command is not allowed here", "rollback command is not allowed here");
    apart("deploy command is not allowed here", "deploy command timed out here");
    same(
      "cannot execute UPDATE in a read-only transaction",
      "cannot execute INSERT in a read-only transaction",
    );
    same(
      "cannot run backups in a read-only transaction",
      "cannot run exports in a read-only transaction",
    );
    apart(
      "cannot execute UPDATE in a read-only transaction",
      "cannot execute UPDATE during recovery",
    );
  });

  it("the names after a noun and its participle, or a verb and its kind, are values", () => {
    same(
      "Dangerous arguments detected: alpha, beta, gamma. Set allow: true to override.",
      "Dangerous arguments detected: delta. Set allow: true to override.",
    );
    same("Unknown parameters: limit, offset.", "Unknown parameters: cursor.");
    apart("Unknown arguments detected: orders.", "Unknown arguments rejected: orders.");
    same(
      "Error processing file notes: unsupported protocol",
      "Error processing file drafts: unsupported protocol",
    );
    same("Failed to execute backup.", "Failed to execute restore.");
    // A noun of a template at the end is no name, and another verb is another template.
    apart("Failed to fetch data.", "Failed to fetch token.");
    apart("Failed to execute backup.", "Failed to schedule backup.");
  });

  it("in an echoed query, tables and selected columns are values, SQL's words are not", () => {
    same(
      "relation missing: SELECT * FROM customers LIMIT 10",
      "relation missing: SELECT * FROM invoices LIMIT 10",
    );
    same("column missing: SELECT nme FROM users", "column missing: SELECT emal, phne FROM users");
    expect(foldValues("delete from orders where id = <v>")).toBe("delete from <v> where id = <v>");
    // Without a query's shape, `from` is a word of the sentence.
    expect(foldValues("failed to read from disk")).toBe("failed to read from disk");
    apart(
      "permission denied [sql: select * from salaries]",
      "relation does not exist [sql: select * from salaries]",
    );
  });

  it("a system call's two names, an id after `with id`, a duration glued to a unit", () => {
    same("rename alpha beta: file exists", "rename gamma delta: file exists");
    apart("rename alpha beta: file exists", "rename alpha beta: permission denied");
    same("Issue with id alpha not found", "Issue with id beta not found");
    apart("Issue with id alpha not found", "Issue with id alpha is archived");
    same("did not respond within 30sms.", "did not respond within 2m15sms.");
    apart("did not respond within 30sms.", "did not respond within 30 attempts.");
  });

  it("a list the call sent is its value, words of error vocabulary or not", () => {
    const withArgs = (text: string, args: Record<string, unknown>) =>
      fingerprint({ tool: "t", channel: "tool", text, args });
    expect(withArgs("cmdline: git add -- read, write failed", { files: "read, write" })).toBe(
      withArgs("cmdline: git add -- admin failed", { files: "admin" }),
    );
    expect(withArgs("denied for read, write", { modes: "read, write" })).not.toBe(
      withArgs("expired for read, write", { modes: "read, write" }),
    );
  });

  it("a status that ends a sentence, an error class and a quoted message stay the condition", () => {
    apart("The status code is 401.", "The status code is 429.");
    apart("Request failed with 503.", "Request failed with 404.");
    same("took 404.5 units", "took 12.5 units");
    apart("Error in get_run: KeyError", "Error in get_run: ValueError");
    same(
      "Error in get_stack: \"No stack found with name 'a'.\"",
      "Error in get_stack: \"No stack found with name 'b'.\"",
    );
    apart("Error in get_stack: \"No stack found with name 'a'.\"", "Error in get_stack: KeyError");
    // A quoted message (`no … found`, `could not`, `unable to`) is not a quoted name.
    apart("Error in get_stack: \"No stack found with name 'a'.\"", 'Error in get_stack: "Q3 Plan"');
    apart('Export failed: "Unable to open the sheet"', 'Export failed: "Quarterly Report"');
  });
});

describe("a quoted word after a colon", () => {
  it("is a name where the word is as often a field's (`limit`, `type`, `status`)", () => {
    same("Error: 'limit' must be positive", "Error: 'offset' must be positive");
    same('unknown field: "type"', 'unknown field: "title"');
    same("column: 'status' is ambiguous", "column: 'owner' is ambiguous");
  });

  it("names the condition where the word is one (`Forbidden`, `timeout`), and after a code key", () => {
    apart('upstream said: "Forbidden"', 'upstream said: "Unauthorized"');
    apart("request failed: 'timeout'", "request failed: 'limit'");
    apart('{"error": {"type": "rate_limit"}}', '{"error": {"type": "not_found"}}');
    apart('{"code": "type"}', '{"code": "size"}');
  });
});

describe("names of several words", () => {
  it("values side by side are one value", () => {
    same("This tool needs a Firecrawl Team account.", "This tool needs a Firecrawl account.");
    expect(foldValues("sheet <v> <v> is protected")).toBe("sheet <v> is protected");
    apart(
      "This tool needs a Firecrawl Team account.",
      "This tool needs a Firecrawl account token.",
    );
  });

  it("the capitalized first word of a name that opens a clause is the name's", () => {
    same(
      "allowed directories: Marketing Site not in /srv",
      "allowed directories: Sales Team not in /srv",
    );
    same("project (Marketing Site) is archived", "project (Sales Team) is archived");
    // The noun of a kind, prose or error vocabulary opens no name.
    apart("error: Table Orders not found", "error: Column Orders not found");
    apart("error: Invalid Token", "error: Expired Token");
  });
});

describe("the thing a failure could not reach, and nouns of kinds", () => {
  it("what a server could not find, reach or act on is a value", () => {
    same("Could not find orders in this workspace", "Could not find invoices in this workspace");
    same("Unable to locate alpha.", "Unable to locate beta.");
    same("failed to connect to alpha", "failed to connect to beta");
    same("cannot merge alpha into main", "cannot merge beta into main");
    // Another verb is another template, and a noun of a template is no name.
    apart("Could not find orders in this workspace", "Could not load orders in this workspace");
    apart("could not find credentials", "could not find settings");
    same("expected alpha to be a number", "expected beta to be a number");
    apart("expected alpha to be a number", "expected alpha to be a string");
  });

  it("a name beside the noun of its kind is a value, the noun stays", () => {
    same("The orders channel does not exist", "The invoices channel does not exist");
    apart("The orders channel does not exist", "The orders channel is archived");
    same("Calendar alpha not accessible", "Calendar beta not accessible");
    same("host alpha refused the connection", "host beta refused the connection");
    same("Property alpha is not allowed", "Property beta is not allowed");
    apart("Property alpha is not allowed", "Property alpha is required");
  });

  it("a name that starts like a month or a day is a name; a month or a day is not", () => {
    same("This tool needs a Marketing account.", "This tool needs a Finance account.");
    same("This tool needs a Monitor account.", "This tool needs a Finance account.");
    expect(normalizeText("closed on Monday")).toBe("closed on monday");
    expect(normalizeText("due in March")).toBe("due in march");
  });
});

describe("error classes and error tuples", () => {
  it("a driver's error tuple keeps its code and its message", () => {
    apart(
      "Error: (1062, \"Duplicate entry 'ana' for key 'users.email'\")",
      "Error: (1054, \"Unknown column 'nme' in 'field list'\")",
    );
    same(
      "Error: (1062, \"Duplicate entry 'ana' for key 'users.email'\")",
      "Error: (1062, \"Duplicate entry 'SKU-1' for key 'products.sku'\")",
    );
    expect(normalizeText("(1062, \"Duplicate entry 'x' for key 'k'\")")).toBe(
      '(1062, "duplicate entry <str> for key <str>")',
    );
  });

  it("a qualified error class is no host name", () => {
    apart(
      "pymysql.err.IntegrityError: constraint failed",
      "pymysql.err.OperationalError: constraint failed",
    );
    apart(
      "(psycopg2.errors.UndefinedTable) relation x",
      "(psycopg2.errors.UndefinedColumn) relation x",
    );
    apart("botocore.ClientError: denied", "botocore.ParamValidationError: denied");
    // A host is still a host.
    same("connect to api.example.com failed", "connect to db.internal.net failed");
  });
});

describe("a word that ends a JSON string, an existing name, a dialled host", () => {
  it("one word after a colon at the end of a JSON string is a value", () => {
    same(
      '{ "errorMessage": "Error: path must be absolute. received: main" }',
      '{ "errorMessage": "Error: path must be absolute. received: develop" }',
    );
    apart(
      '{ "errorMessage": "Error: request failed: timeout" }',
      '{ "errorMessage": "Error: request failed: refused" }',
    );
  });

  it("the name after `already exists:` is a value", () => {
    same(
      "skill x already exists: alpha. Choose another",
      "skill x already exists: beta. Choose another",
    );
    apart(
      "skill x already exists: alpha. Choose another",
      "skill x not found: alpha. Choose another",
    );
  });

  it("the host Go dials is a value", () => {
    same(
      "dial tcp postgres:5432: connect: connection refused",
      "dial tcp redis:6379: connect: connection refused",
    );
    apart(
      "dial tcp postgres:5432: connect: connection refused",
      "dial tcp postgres:5432: i/o timeout",
    );
  });
});

describe("identifiers written in capitals", () => {
  it("stay wherever the text also writes them in capitals; others are values", () => {
    expect(normalizeText("QUEUE_FULL: the queue_full limit")).toBe(
      "queue_full: the queue_full limit",
    );
    expect(normalizeText("QUEUE_FULL-2 hit, my_queue waits")).toBe(
      "queue_full-<id> hit, <v> waits",
    );
    expect(normalizeText("XQUEUE_FULL hit, queue_full waits")).toBe("xqueue_full hit, <v> waits");
  });
});

describe("a code written in capitals, with no error word, is the condition", () => {
  it("two texts that differ only by such a code keep apart fingerprints", () => {
    apart("QUEUE_FULL", "CONTENT_FILTERED");
    apart("request rejected: QUEUE_FULL", "request rejected: CONTENT_FILTERED");
    apart("Error: QUEUE_FULL", "Error: CONTENT_FILTERED");
    apart("code=QUEUE_FULL", "code=CONTENT_FILTERED");
    apart("upstream returned QUEUE_FULL", "upstream returned CONTENT_FILTERED");
    apart("The request was blocked (QUEUE_FULL).", "The request was blocked (CONTENT_FILTERED).");
    apart('{"error":"QUEUE_FULL"}', '{"error":"CONTENT_FILTERED"}');
    apart(
      "upstream said QUEUE_FULL: the queue is busy",
      "upstream said CONTENT_FILTERED: the queue is busy",
    );
    apart("job QUEUE_FULL for tenant acme", "job CONTENT_FILTERED for tenant acme");
  });

  it("the same code still shares its fingerprint, and lower-case identifiers are still values", () => {
    same("request rejected: QUEUE_FULL (took 31ms)", "request rejected: QUEUE_FULL (took 5ms)");
    same("Table orders_2024 is locked", "Table customer_events is locked");
    // Where the text itself says a value stands, a value in capitals is still a value: after the
    // noun of its kind, after `invalid … kind:`, or as the name of a setting (`NAME=value`).
    same("Warehouse table SALES_EU is read-only", "Warehouse table HR_RECORDS is read-only");
    same("Invalid report kind: MONTHLY_SUMMARY", "Invalid report kind: DAILY_DIGEST");
    same("cannot apply CACHE_TTL=5 now, retry later", "cannot apply POOL_SIZE=9 now, retry later");
    // The call's own value in capitals is the call's, whatever its shape.
    expect(
      fingerprint({
        tool: "t",
        channel: "tool",
        text: "unknown region EU_WEST",
        args: { region: "EU_WEST" },
      }),
    ).toBe(
      fingerprint({
        tool: "t",
        channel: "tool",
        text: "unknown region US_EAST",
        args: { region: "US_EAST" },
      }),
    );
  });
});

// Phrasings written for these tests (fprint16), in the shapes of the opened sets' misses.
describe("the name of a slot, after or before its noun", () => {
  it("after `parameter`, `field`, `param`, a name of the slot is a value, common words too", () => {
    same(
      "parameter limit is not of type string, is float64",
      "parameter cursor is not of type string, is float64",
    );
    same("Field id cannot be null or empty", "Field title cannot be null or empty");
    same(
      "invalid parameter row_max_count: must be a number",
      "invalid parameter batch: must be a number",
    );
    same(
      "Error: param $owner was referenced without a value",
      "Error: param $tenant was referenced without a value",
    );
  });

  it("before its noun, only a common name of a slot is a value", () => {
    same("url parameter is required", "region parameter is required");
    same("Error: id param is required", "Error: query param is required");
    // A server's own sentence for one slot, and words of a condition, stay.
    apart("reportKey parameter is required", "sheetOwner parameter is required");
    apart("field invalid: expected number", "field missing: expected number");
    apart("required parameter is missing", "optional parameter is missing");
  });

  it("a joined identifier after the noun of its kind is a name, error words and all", () => {
    same("tool fetch_error_logs not found", "tool sync_team_calendar not found");
    same("the engine nightly_readonly_v2 is read-only", "the engine etl_batch_daily is read-only");
    same("unknown parameter row_max_total", "unknown parameter cursor_token");
    // An identifier of condition words is a condition; two joined words after a kind are as
    // often a state or a code as a name.
    apart("tool not_found", "tool read_only");
    apart("Request rejected: account over_quota", "Request rejected: account insufficient_funds");
    apart("blocked: index read_only_allow_delete", "blocked: index write_block");
  });

  it("the subject of a validation opening a sentence is a slot, when it is a programmatic name", () => {
    same(
      "bucket_name is required, a text is expected",
      "archive_id is required, a text is expected",
    );
    same("start_at has wrong type: int", "window_ms has wrong type: int");
    apart("name is required", "tenant is required");
    apart("token is required", "password is required");
    // A plain word may be the slot or the condition.
    apart("Error: workspace is required", "Error: authorization is required");
    apart("Error: subscription is required", "Error: approval is required");
    apart("Request rejected. Verification is required.", "Request rejected. Project is required.");
    apart("Error: prompt is too long", "Error: title is too long");
  });

  it("after the noun of a slot, what the slot has is a word of the condition, not its name", () => {
    apart(
      "function call failed: argument count does not match the signature",
      "function call failed: argument type does not match the signature",
    );
    apart(
      "Invalid request: parameter name is too long (max 2048)",
      "Invalid request: parameter value is too long (max 2048)",
    );
    apart(
      "cannot sync table: column type has changed",
      "cannot sync table: column order has changed",
    );
    apart("property key must be a string", "property value must be a string");
    same("field id cannot be empty", "field owner_ref cannot be empty");
    // The name before a colon, as before a predicate.
    same(
      "invalid parameter row_max_count: must be positive",
      "invalid parameter page_size_hint: must be positive",
    );
    // Which field an upstream rejects, as a JSON key's value in words of a condition, is part of
    // its answer; a tool's name under the same words is the call's.
    apart('{"error":"rejected","field":"timeout"}', '{"error":"rejected","field":"quota"}');
    same('{"error":"rejected","tool":"timeout"}', '{"error":"rejected","tool":"quota"}');
  });
});

describe("values a validator or a decoder echoes", () => {
  it("pydantic's input_value is the call's input, whatever its shape", () => {
    same(
      "1 validation error for SearchArgs\nquery\n  Missing [type=missing, input_value={'q': 1}, input_type=dict]",
      "1 validation error for SearchArgs\nquery\n  Missing [type=missing, input_value={'q': 1, 'page': {'n': 2}}, input_type=dict]",
    );
    apart(
      "1 validation error for SearchArgs\nquery\n  Missing [type=missing, input_value={'q': 1}, input_type=dict]",
      "1 validation error for SearchArgs\nquery\n  Input should be a valid string [type=string_type, input_value={'q': 1}, input_type=dict]",
    );
  });

  it("the JSON kind Go's decoder met is the call's; the type it expected stays", () => {
    same(
      "json: cannot unmarshal string into Go struct field .retries of type int",
      "json: cannot unmarshal bool into Go struct field .retries of type int",
    );
    apart(
      "json: cannot unmarshal string into Go struct field .retries of type int",
      "json: cannot unmarshal string into Go struct field .retries of type []string",
    );
  });

  it("what is unsupported, after its noun and a colon, is a value; a file extension too", () => {
    same(
      "unsupported export format: yaml. supported formats: csv, json",
      "unsupported export format: toml. supported formats: csv, json",
    );
    same("Unsupported input file type: .odt", "Unsupported input file type: .key");
    apart("unsupported operation: denied", "unsupported operation: expired");
  });

  it("a tool or a command named by its key is a value, error words and all", () => {
    same(
      '{"success":false,"error":"tool crashed","toolname":"fetch_error_report"}',
      '{"success":false,"error":"tool crashed","toolname":"get_invoices"}',
    );
    apart(
      '{"code":"rate_limited","toolname":"get_invoices"}',
      '{"code":"quota_exceeded","toolname":"get_invoices"}',
    );
  });

  it("a relation, or a name before an escaped line break, after the noun of its kind", () => {
    same(
      "permission denied for relation ledger (SQLSTATE 42501)",
      "permission denied for relation payouts (SQLSTATE 42501)",
    );
    same(
      '{"error": "permission denied for table ledger\\n"}',
      '{"error": "permission denied for table audit_trail\\n"}',
    );
  });
});

describe("identifiers in camel case", () => {
  it("inside a sentence, one that holds no word of a condition is a value", () => {
    same(
      "Upstream error (code: 9)\nPlease specify reportTypeId.",
      "Upstream error (code: 9)\nPlease specify ownerGroupId.",
    );
    same(
      '400 {"message":"Your call holds an invalid imageKey parameter."}',
      '400 {"message":"Your call holds an invalid albumPath parameter."}',
    );
  });

  it("one that opens the text, or names a condition, stays", () => {
    apart("fooBar parameter is required", "bazQux parameter is required");
    apart("request failed (AccessDenied)", "request failed (QuotaExceeded)");
    apart("request failed (ResourceInUse)", "request failed (DryRunOperation)");
  });

  it("a code of a condition or a state in camel case is the failure, not a value", () => {
    apart(
      "rollout stuck: 2 pods in CrashLoopBackOff state",
      "rollout stuck: 2 pods in ImagePullBackOff state",
    );
    apart("task stopped (EssentialContainerExited)", "task stopped (SpotInterruption)");
    apart(
      "S3 request failed (SlowDown), retry later",
      "S3 request failed (IncorrectState), retry later",
    );
    apart(
      "worker exited with KeyboardInterrupt in handler",
      "worker exited with SystemExit in handler",
    );
    apart(
      '{"error":"query failed at line 3\\nExpected identifier"}',
      '{"error":"query failed at line 3\\nEncountered identifier"}',
    );
  });

  it("the subject of a sentence about one slot stays, wherever the sentence starts", () => {
    apart(
      "MCP error -32602: datasetName parameter is required",
      "MCP error -32602: reportKey parameter is required",
    );
  });
});

describe("the fold's patterns", () => {
  it.each(FOLD_PATTERNS.map((p) => [p.source.slice(0, 60), p] as const))(
    "no nested unbounded quantifier in %s",
    (_name, pattern) => {
      expect(hasNestedUnboundedQuantifier(pattern.source)).toBe(false);
    },
  );
});
