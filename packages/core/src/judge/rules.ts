/**
 * The built-in text rule table of the classifier (docs/architecture.md §3, step 3), tuned and tested on
 * `test/corpus/`. Every pattern is a general phrasing of a failure class, never a string of one
 * server: the same kinds of texts from other servers must land in the same place.
 *
 * Each pattern is tested twice: on the text as written, and on a copy with identifiers split into
 * words (`channel_not_found` -> `channel not found`, `AccessDeniedException` ->
 * `Access Denied Exception`), so error codes and prose share one phrasing. When no rule matches,
 * the caller applies the default (`correct_arguments`, reason `unclassified`).
 */

import type { Action, Certainty, Reason } from "../types.ts";
import { type Alternative, buildPrefilter, holds, type Prefilter, scan } from "./rule-prefilter.ts";

/** One row of the table: a phrasing and the classification it stands for. */
export interface TextRule {
  /** A reason from `REASONS` (types.ts). */
  readonly reason: Reason;
  /** Normally `REASONS[reason]`, spelled out so the table reads on its own. */
  readonly action: Exclude<Action, "host">;
  /** Per failure class (docs/architecture.md §2). */
  readonly certainty: Certainty;
  /** No `g`/`y` flags: they make `test` stateful. */
  readonly pattern: RegExp;
  /**
   * A retry read from a generic word for a failed dependency (a bare 500 or 5xx, "internal
   * error", "unknown error", "timed out", "deadline exceeded", "fetch failed", "is locked"), not
   * from a named transient condition (429, 502, 503, 504, a refused or reset connection,
   * `ETIMEDOUT`, a lock held or a busy pool). Such a word also wraps failures a retry cannot
   * clear, and a write that failed with it may have happened: `decide` does not repeat a
   * `mutating` tool on it (stopsGuessedWrite in decide.ts).
   *
   * A correction read from a generic word (another 4xx, a bare "invalid" or "malformed") says the
   * call's own input was refused, and the model can read its arguments again. A conflict read
   * from a bare status (409, 412) or the bare word ("Conflict", "Precondition Failed") says only
   * that the target's state refused the write, and names neither what conflicts nor what to
   * change: `decide` stops a `mutating` tool on it (`bareConflict`, classify.ts). Either yields to
   * any specific phrasing the text also holds (`already exists`, `duplicate`, `modified since`,
   * `has conflicts`).
   */
  readonly weak?: true;
  /**
   * Read on the text as written only, never on it with its identifiers split into words: an
   * operation's name (`bulk_partial_insert`, `tickets_partial_update`) is no sentence of the text.
   */
  readonly raw?: true;
}

/**
 * How much of a failure text the rules look at, the built-in ones and the policy's: error texts
 * put their cause first, and a bound keeps matching cheap whatever a broken server sends.
 */
export const RULE_TEXT_LIMIT = 4000;

/** The part of a text the rules read: its first RULE_TEXT_LIMIT characters. */
export function ruleHead(text: string): string {
  return text.length > RULE_TEXT_LIMIT ? text.slice(0, RULE_TEXT_LIMIT) : text;
}

type Classification = Omit<TextRule, "pattern">;

const c = (
  reason: Reason,
  action: Exclude<Action, "host">,
  certainty: Certainty,
): Classification => ({ reason, action, certainty });

const INVALID = c("invalid_argument", "correct_arguments", "failed");
const NOT_FOUND = c("not_found", "correct_arguments", "failed");
const CONFLICT = c("conflict", "correct_arguments", "failed");
const RATE_LIMITED = c("rate_limited", "retry_dependency", "failed");
const UNAVAILABLE = c("unavailable", "retry_dependency", "failed");
const TIMEOUT = c("timeout", "retry_dependency", "unknown");
const UPSTREAM = c("upstream_error", "retry_dependency", "unknown");
const CLOSED = c("connection_closed", "retry_dependency", "unknown");
const REFUSED = c("connection_refused", "retry_dependency", "not_sent");
const UNKNOWN_TOOL = c("unknown_tool", "switch_tool", "failed");
const NOT_SUPPORTED = c("not_supported", "switch_tool", "failed");
const UNAUTHORIZED = c("unauthorized", "stop", "failed");
const FORBIDDEN = c("forbidden", "stop", "failed");
const QUOTA = c("quota_exceeded", "stop", "failed");
const BUSINESS_RULE = c("business_rule", "stop", "failed");
const MISCONFIGURED = c("misconfigured", "stop", "failed");

/**
 * HTTP statuses and their classification. A status the table does not name falls back to its
 * class: other 4xx are refusals the model can fix, other 5xx are upstream errors.
 */
const HTTP_STATUS: Readonly<Record<number, Classification>> = {
  400: INVALID,
  401: UNAUTHORIZED,
  402: QUOTA,
  403: FORBIDDEN,
  404: NOT_FOUND,
  405: NOT_SUPPORTED,
  408: TIMEOUT,
  409: CONFLICT,
  410: NOT_FOUND,
  412: CONFLICT,
  413: INVALID,
  415: INVALID,
  422: INVALID,
  423: UNAVAILABLE,
  425: UNAVAILABLE,
  429: RATE_LIMITED,
  500: UPSTREAM,
  501: NOT_SUPPORTED,
  502: UPSTREAM,
  503: UNAVAILABLE,
  504: TIMEOUT,
  507: MISCONFIGURED,
  511: UNAUTHORIZED,
};

/** Maps an HTTP status to a classification; `undefined` for anything that is not 4xx or 5xx. */
export function classifyHttpStatus(status: number): Classification | undefined {
  if (!Number.isInteger(status) || status < 400 || status > 599) return undefined;
  const known = HTTP_STATUS[status];
  if (known) return known;
  return status < 500 ? INVALID : UPSTREAM;
}

/**
 * A status number in text: after a word that announces it (`status code 404`, `HTTP 502`,
 * `API error (429)`, `Server error '503 …'`), in brackets (`[403 Forbidden]`, `(504)`), or
 * followed by its reason phrase (`429 Too Many Requests`).
 */
function statusPattern(code: string, phrase?: string): RegExp {
  const pattern = statusRegExp(code, phrase);
  STATUS_PATTERNS.add(pattern);
  return pattern;
}

/** Patterns of statuses in text: each match holds a number of three digits, 4xx or 5xx. */
const STATUS_PATTERNS = new WeakSet<RegExp>();

function statusRegExp(code: string, phrase?: string): RegExp {
  const announced = String.raw`\b(?:status(?:[ _]?code)?|https?(?:\/\d(?:\.\d)?)?|code|error|responded with)[\s:=#'"(\[]{0,3}${code}(?!\d)`;
  // `The status code is 401.`, `status was 503`: the number after a verb (not `the status of 500
  // orders`, a count).
  const stated = String.raw`\bstatus(?:[ _]?code)? (?:is|was) ${code}(?!\d)`;
  const bracketed = String.raw`[(\[]${code}(?!\d)`;
  const withPhrase = phrase ? String.raw`|\b${code}\s+${phrase}` : "";
  return new RegExp(`${announced}|${stated}|${bracketed}${withPhrase}`, "i");
}

function statusRule(code: number, phrase?: string): TextRule {
  const known = classifyHttpStatus(code);
  if (!known) throw new Error(`not an HTTP error status: ${code}`);
  const rule: TextRule = { ...known, pattern: statusPattern(String(code), phrase) };
  // A bare 500 names no transient condition, a bare 409 or 412 no conflict (WEAK_STATUS).
  return WEAK_STATUS.has(code) ? { ...rule, weak: true } : rule;
}

/**
 * Statuses that name a class and nothing of its cause (TextRule.weak): a 500 says only that the
 * server failed (a retry on it is a guess), a 409 or a 412 only that the target's state conflicts
 * with the write (a correction on it is a guess).
 */
const WEAK_STATUS: ReadonlySet<number> = new Set([409, 412, 500]);

/** One case-insensitive pattern from alternatives, so each phrasing of a family reads on its own line. */
function oneOf(...alternatives: RegExp[]): RegExp {
  return new RegExp(alternatives.map((a) => `(?:${a.source})`).join("|"), "i");
}

/**
 * A write the text reports done, then a later step that failed: `Order ORD-1 was created, but we
 * could not connect to the mail service`, `Invoice INV-7 saved; webhook delivery failed: 503`,
 * `Charge captured. Ledger sync failed: database is busy, try again later`. The text opens with the
 * write (its subject in a few words, no negation, a past participle of a write), and a later
 * clause (after `.`, `;`, `,`, `but`, `however`, a dash) names a failure.
 */
const WRITE_DONE =
  "(?:created|saved|captured|charged|sent|posted|published|submitted|stored|written|committed|recorded|inserted|added|updated|deleted|removed|uploaded|processed|placed|booked|scheduled|transferred|paid|refunded|applied|merged|registered|issued|succeeded|completed)";
const NOT_A_SUBJECT = String.raw`(?:not|never|no|nothing|none|already|request|requests|query|cannot|can't|could|couldn't|failed|failure|unable|error|errors|unless|if|whether)\b`;
const SIDE_STEP_FAILED =
  "(?:failed|failure|fails|could ?n[o']t|can ?n[o']t|cannot|unable|error|errors|did ?n[o']t|was ?n[o']t|were ?n[o']t|timed out|time ?out|unavailable|unreachable|refused|rejected|denied)";
const PARTIAL_SUCCESS = new RegExp(
  [
    String.raw`^\W*(?:successfully\s+)?`,
    // The subject: at most five words, none a negation, a refusal or a condition.
    String.raw`(?:(?!${NOT_A_SUBJECT})[^\s,;:.!?]+\s+){0,5}?`,
    String.raw`(?:(?:was|were|has been|have been|is|are|got)\s+)?(?:successfully\s+)?`,
    String.raw`${WRITE_DONE}\b(?:\s+successfully)?`,
    // Then a later clause that names a failure.
    String.raw`[^\n]{0,120}?(?:[.;!]\s*|,?\s+but\b|,\s*however\b|,\s*|\s+-+\s+|\n)`,
    String.raw`[^\n]{0,160}?\b${SIDE_STEP_FAILED}\b`,
  ].join(""),
  "i",
);

/** A write's past participle, or `imported`, for {@link PARTIAL_BATCH}. */
const BATCH_DONE = `(?:${WRITE_DONE}|imported)`;

/**
 * A batch of which a part was written, told in words (`Partial failure: …`, a `partial_failure`
 * field): read on the text as written (`raw`), so an operation's name that holds the words
 * (`bulk_partial_insert`, `issues_partial_success_handler`) is not read as one. Not `partial
 * update`: the name of an HTTP PATCH.
 */
const PARTIAL_WORDS = oneOf(
  /\bpartial[ _](?:failure|success|write|commit|insert|import)(?![a-z0-9])/,
);

/** A batch of which a part was written, by its count (see its rule in {@link BUILTIN_RULES}). */
const PARTIAL_BATCH = oneOf(
  new RegExp(
    String.raw`\b(?!0 )\d+ (?:of|out of) \d+ (?:[\w-]+ ){0,3}?(?:(?:was|were|has been|have been)\s+)?${BATCH_DONE}\b`,
  ),
  /\bfailed to [a-z]+ \d+ (?:of|out of) \d+\b/,
  new RegExp(
    String.raw`\b(?!0 )\d+ (?:[\w-]+ ){0,2}?${BATCH_DONE}\b[^\n]{0,40}?\b\d+ (?:[\w-]+ ){0,2}?(?:failed|rejected|errored|skipped)\b`,
  ),
  new RegExp(
    String.raw`\b(?:rows?|items?|records?|entries|lines|documents|files|messages) \d+\s*(?:-|to|through)\s*\d+ (?:were|was|have been|had been) ${BATCH_DONE}\b`,
  ),
);

/**
 * An argument of the call offered in place of a server setting: `the "appId" property is not
 * provided`, `"sender" is not provided`, `Specify the userId or set …`, `or provide publishKey and
 * subscribeKey in the request`.
 */
const ARGUMENT_INSTEAD = String.raw`(?:\b(?:property|parameter|argument|field|option)s? (?:is |are |was |were )?not (?:provided|given|passed|specified)\b|['"\`][\w.-]{1,40}['"\`] (?:is |are |was |were )?not (?:provided|given|passed|specified)\b|\bspecify (?:the |an? )?['"\`]?[\w.-]+['"\`]? or\b|\bor (?:provide|pass|specify|send|include|supply) [^.\n]{0,80}?\b(?:in|as|with) (?:the |your )?(?:request|call|arguments?|parameters?|input)\b)`;

/** Ordered; first match wins. */
export const BUILTIN_RULES: readonly TextRule[] = [
  // A write that happened, then a side step that failed: a partial success, not an argument
  // error. Repeating the call would write twice, so nobody in the loop repeats it.
  { ...c("partial_success", "stop", "unknown"), pattern: PARTIAL_SUCCESS },
  // A batch of which a part was written, told by its count: `3 of 5 rows inserted`, `only 3 of 5
  // files were uploaded`, `Failed to create 2 of 5 issues`, `3 documents inserted, 2 failed`,
  // `Partial failure: …`, `(rows 1-3 were imported)`. Corrected and sent again, the part written
  // would be written twice (an argument rule read the failed row's error): nobody repeats it.
  { ...c("partial_success", "stop", "unknown"), pattern: PARTIAL_WORDS, raw: true },
  { ...c("partial_success", "stop", "unknown"), pattern: PARTIAL_BATCH },
  // Unknown tool (every MCP SDK's phrasing): the model picks one from the tool list.
  {
    ...UNKNOWN_TOOL,
    pattern: oneOf(
      /\bunknown tool\b/,
      /^tool (?:not found|does not exist)\b/,
      /\bno such tool\b/,
      /\bno tool (?:named|called|with|matching)\b/,
      /\btool\s+['"`]?[\w.-]+(?:[:/][\w.-]+)*['"`]?\s+(?:(?:was|is)\s+)?(?:not found|does not exist|not registered|unknown)\b/,
      /:\s*tool not found\b/,
    ),
  },
  // Disabled, deprecated or wrong tool: this one cannot serve, another one can.
  {
    ...NOT_SUPPORTED,
    pattern: oneOf(
      /\btool\s+['"`]?[\w.-]+(?:[:/][\w.-]+)*['"`]?\s+(?:is\s+)?(?:disabled|not enabled|not available|unavailable|not allowed)\b/,
      /\b(?:is|has been) (?:deprecated|removed) and (?:is )?(?:unavailable|no longer available|removed)\b/,
      /\b(?:tool|endpoint|method|operation) (?:is|has been) (?:deprecated|removed|retired)\b/,
      /\bwrong tool\b/,
      /\buse (?:the )?['"`]?[\w.-]+['"`]? tool instead\b/,
    ),
  },
  // The tool exists but is meant for other operations: the text names the one to use.
  {
    ...NOT_SUPPORTED,
    pattern: oneOf(
      /\buse\s+`[a-z][\w.-]*_[\w.-]+`\s+(?:to|for|instead)\b/,
      /\b(?:queries|statements|operations|commands|requests|methods|actions)\s+(?:are|is)\s+not\s+(?:allowed|supported|permitted)\s+(?:for|in|with|by)\s+['"`]?(?!read_?only)[a-z]+(?:_[a-z]+)+['"`]?\s*(?:[.,;:]|$)/,
      /\bonly\s+(?:\w+\s+){1,3}(?:queries|statements|operations|commands|requests|methods|actions)\s+(?:are|is)\s+(?:allowed|supported|permitted)\b/,
    ),
  },
  // The tool ran but its result broke its own output schema: a server bug nobody in the loop fixes.
  {
    ...c("misconfigured", "stop", "unknown"),
    pattern: oneOf(/\boutput validation error\b/, /\bdoes not match the tool'?s output schema\b/),
  },
  // A confirmation flag the schema requires to be true (`confirm: true`, `confirmDelete`): setting
  // it is the user's consent to a destructive action, not a fix the model makes on its own.
  {
    ...c("not_approved", "stop", "failed"),
    pattern: oneOf(
      /\bconfirm(?:ation|ed)?[ _-]?\w*\b[^\n]{0,80}\bexpected\b[^\n]{0,20}\btrue\b/,
      /\bexpected["'`]?\s*[:=]?\s*true\b[^\]}]{0,80}\bconfirm/,
      /\b(?:set|pass) ['"`]?confirm(?:ation|ed)?[\w-]*['"`]?\s*(?:[:=]|to)\s*['"`]?true\b/,
    ),
  },
  // Schema checks of the arguments (MCP SDKs, zod, pydantic): the model fixes the call.
  {
    ...INVALID,
    pattern: oneOf(
      /\binput validation error\b/,
      /\binvalid arguments? for\b/,
      /^invalid (?:arguments|input|params|parameters)\s*:/,
      /\b\d+ validation errors? for\b/,
      /"code"\s*:\s*"invalid_type"/,
    ),
  },
  // POSIX error codes, as Node and Python print them: each names its class precisely. A program
  // the server cannot start is missing from its host, not from the arguments.
  { ...MISCONFIGURED, pattern: /\bspawn \S+ ENOENT\b/ },
  {
    ...NOT_FOUND,
    pattern: /\b(?:ENOENT|ENOTDIR|EISDIR)\b/,
  },
  { ...CONFLICT, pattern: /\b(?:EEXIST|ENOTEMPTY)\b/ },
  { ...FORBIDDEN, pattern: /\b(?:EACCES|EPERM)\b/ },
  { ...c("misconfigured", "stop", "unknown"), pattern: /\b(?:ENOSPC|EROFS|EDQUOT)\b/ },
  { ...UNAVAILABLE, pattern: /\b(?:EMFILE|ENFILE|EBUSY|EAGAIN)\b/ },
  { ...NOT_SUPPORTED, pattern: /\bEXDEV\b/ },
  // A path or value outside the allowlist or sandbox: the model can choose one inside it.
  {
    ...INVALID,
    pattern: oneOf(
      /\boutside (?:of )?(?:the )?(?:allowed|permitted|repository|repo|workspace|sandbox|root|project directory|working (?:tree|directory))\b/,
      /\bnot (?:in|within|under) (?:the |any )?(?:allowed|permitted) (?:\w+ )?(?:list|directories|directory|domains?|roots?|paths?|hosts?)\b/,
      // A path that climbs out with `..`: the model passes a plain path instead.
      /\b(?:path|directory) traversal\b/,
    ),
  },
  // A time or size limit the database or API sets, named in the text (a statement timeout, a
  // maximum execution time): the same query fails again however long the run waits, a narrower
  // one does not (test/blind/README.md, "decided here"). A bare "timed out" names no limit.
  {
    ...INVALID,
    pattern: oneOf(
      /\bstatement[ _]timeout\b/,
      /\bmax(?:imum)?[ _](?:statement[ _])?execution[ _]time\b/,
      /\b(?:query|statement|request)\b[^.\n]{0,20}\b(?:exceeded|exceeds|over) (?:the )?(?:maximum|max|configured|allowed) (?:\w+ ){0,2}(?:execution time|run ?time|duration)\b/,
    ),
  },
  // A limit per second or minute is a rate limit, whatever it is called: waiting clears it.
  {
    ...RATE_LIMITED,
    pattern: oneOf(
      /\b(?:quota|limit)\b[^.\n]{0,80}\bper (?:second|minute)\b/,
      /\bper[- ](?:second|minute) (?:\w+ )?(?:limit|quota)\b/,
    ),
  },
  // "Does not exist or you have no access": most often a wrong name, so the model looks it up.
  {
    ...NOT_FOUND,
    pattern:
      /\b(?:not found|does ?n[o']t exist)\b[^.\n]{0,20}\bor (?:you )?(?:do ?n[o']t|does ?n[o']t) have (?:access|permission)\b/i,
  },
  // A lock another party holds, in a lock's own words: it clears when they are done, whatever
  // else the text says of access (`Resource Access Blocked. Failed to acquire the edit lock`).
  {
    ...UNAVAILABLE,
    pattern: oneOf(
      /\b(?:failed|unable|could ?n[o']t|cannot|can't)(?: to)? (?:acquire|obtain|get|take|set) (?:the |an? )?(?:[\w-]+ ){0,2}lock\b/,
      /\block (?:is )?(?:not available|unavailable|currently held|already (?:held|taken|acquired))\b/,
      /\bconflicting lock\b/,
      /\blocked by another (?:process|transaction|session|operation|request|query|job|writer|connection)\b/,
      // Windows' sharing violation: another program has the file open until it closes it.
      /\bbeing used by another process\b/,
    ),
  },
  // Person-only cues, in the service's own words: a right the caller lacks, an account to verify,
  // a plan to buy, a feature or region the account has not enabled, a content policy. They outrank
  // the argument-like wording such texts carry ("missing", "required", "must be", "not
  // supported"): nobody in the loop can fix them, and they are never retried.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /\bnoperm\b/,
      /\b(?:has|have) no (?:\w+ )?(?:permissions?|privileges?|rights)\b/,
      /\bno (?:\w+ )?(?:permissions?|privileges?) (?:to|for|on)\b/,
      /\bmissing (?:the )?(?:required )?(?:permissions?|privileges?|access(?![ _-]?(?:token|key|code|id)))\b/,
      /\b(?:you|user|caller|client|account|token|app|bot|role) (?:\w+ )?(?:needs?|requires?) (?:the |an? )?[\w:.'"`-]{1,60} (?:permissions?|privileges?|roles?|scopes?)\b/,
      /\bpermissions? ['"`]?[\w:./-]+['"`]? (?:is |was )?denied\b/,
      /\b(?:command|operation|action|request) denied (?:to|for) (?:user|role|account)\b/,
      /\b(?:does|do) ?n[o']t have (?:the )?(?:required |necessary |sufficient )?authori[sz]ation\b/,
      /\bnot enough (?:rights|permissions?|privileges?|access)\b/,
      /\b(?:has|have) ?n[o']t been granted\b/,
      /\b(?:has|have) not been granted\b/,
      /\b(?:required|granted) (?:access )?scopes?\b/,
      /\baccess scopes?\b/,
      /\brequires? (?:\w+ )?(?:approval|consent) (?:for|of|from)\b/,
      /\b(?:different|higher|elevated) access (?:level|tier)\b/,
      /\b(?:blocked|kicked|banned) by the (?:user|owner|admin(?:istrator)?)\b/,
    ),
  },
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      // Content and usage policies: the request itself is refused, whoever rephrases it.
      /\bsafety (?:system|filters?|policy|policies)\b/,
      /\bcontent (?:filter(?:ing)?|moderation|management) polic(?:y|ies)\b/,
      /\b(?:usage|content|acceptable use) polic(?:y|ies)\b/,
      /\bflagged (?:as|by|for)\b[^.\n]{0,60}\b(?:policy|policies|safety|moderation|unsafe|harmful)\b/,
    ),
  },
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      // An account, organization, sender or domain to verify or activate first.
      /\bverify(?:ing)? (?:your|the|this) (?:\w+ )?(?:account|organi[sz]ation|email(?: address)?|identity|phone(?: number)?|domain|sender)\b/,
      /\b(?:account|organi[sz]ation|email(?: address)?|identity|phone(?: number)?|domain|sender)s? (?:\w+ )?(?:must|needs? to|has to|have to) be verified\b/,
      /\b(?:account|organi[sz]ation|email(?: address)?|identity|domain|sender) (?:is |has )?(?:not|n[o']t|never) (?:yet )?(?:been )?verified\b/,
      /\b(?:unverified|a verified) (?:\w+ )?(?:account|organi[sz]ation|email|identity|sender|domain)\b/,
      /\bcomplete (?:your |the )?(?:account )?(?:activation|verification|onboarding)\b/,
      /\bactivate (?:your|the) account\b/,
    ),
  },
  {
    ...QUOTA,
    pattern: oneOf(
      // A plan or subscription the account lacks.
      /\b(?:premium|paid|pro|plus|business|enterprise|upgraded?) (?:(?:plan|tier|account|subscription|membership|license) )?(?:is )?required\b/,
      /\brequires? an? (?:paid|premium|pro|business|enterprise|upgraded) (?:plan|tier|account|subscription|license)\b/,
      /\bsubscription (?:\w+ ){0,2}(?:not registered|does not include|inactive|expired|cancell?ed)\b/,
      /\bnot (?:available|included) (?:on|in|with) (?:your|the (?:free|current)) (?:\w+ )?(?:plan|tier|subscription)\b/,
    ),
  },
  {
    ...FORBIDDEN,
    pattern: oneOf(
      // A feature, API, region or country the account or project has not enabled.
      /\bnot (?:been )?enabled (?:for|in|on) (?:this|the|your) (?:\w+ )?(?:region|account|project|organi[sz]ation|org|workspace|team|tenant|subscription|country|plan|merchant|customer|user|app|application)\b/,
      /\bnot (?:available|allowed|permitted) (?:for|to|on) (?:your|this) (?:\w+ )?(?:account|plan|organi[sz]ation|subscription|tier|merchant|project|workspace|app|application)\b/,
      /\b(?:unavailable|disabled) (?:for|to|on) (?:your|this) (?:\w+ )?(?:account|plan|organi[sz]ation|subscription|tier|merchant|project|workspace)\b/,
      /\b(?:has|have) ?n[o']t been enabled\b/,
      /\b(?:has|have) not been enabled\b/,
      /\b(?:account|organi[sz]ation|project|workspace|team|tenant) (?:\w+ )?(?:is )?not (?:enabled|allowed|permitted|eligible) (?:for|to)\b/,
      /\bapi\b[^.\n]{0,80}\b(?:is|was|has been) disabled\b/,
      /\benable it (?:by|at|in|from)\b/,
      /\bnot (?:available|supported|enabled|allowed) in your (?:country|region|location|territory|area)\b/,
      /\b(?:user|your|caller'?s?|client) (?:location|country|region|territory)\b[^.\n]{0,30}\bnot (?:supported|available|allowed)\b/,
      /\bcountry, region,? (?:or|and) territory\b/,
    ),
  },
  // Quota, credits, billing, plan: a limit that only money or an account lifts, not waiting.
  // A value of the request over a business limit (an amount, a size of an order) is a rule of the
  // service, not a quota of the caller: checked before quotas, whose wording ("daily limit") it shares.
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\b(?:amount|value|total|sum|price|payment|transfer|withdrawal|order|quantity)\b[^.\n]{0,40}\b(?:exceeds?|exceeding|over|above)\b[^.\n]{0,30}\blimit\b/,
    ),
  },
  {
    ...QUOTA,
    pattern: oneOf(
      /\bquota (?:has been |was |is )?(?:exceeded|exhausted|reached|used up)\b/,
      /\b(?:exceeded|exhausted|reached) (?:your |their |the |its )?(?:\w+ ){0,2}quota\b/,
      /\b(?:out of|insufficient|no remaining) (?:quota|credits?|funds|balance)\b/,
      /\binsufficient (?:\w+ )?credits?\b/,
      /(?:\bnot|n't) have enough (?:\w+ )?(?:balance|funds|credits?)\b/,
      /\bcredit balance\b/,
      /\bbalance is too low\b/,
      /\bpayment (?:required|method|setup|details)\b/,
      /^\W*(?:error:?\s*)?payment failed\b/,
      /\b(?:enable|set up|setup|add|update) (?:a |your )?billing\b/,
      /\bbilling (?:is )?(?:not enabled|disabled|required|account|details)\b/,
      /\bupgrade (?:your |the )?(?:plan|account|subscription|tier)\b/,
      /\b(?:plan|subscription|tier) required\b/,
      /\b(?:paid|pro|team|enterprise|premium|higher) (?:plan|tier|subscription)s?\b/,
      /\bnot subscribed\b/,
      /\bopt[- ]?in required\b/,
      /\b(?:free|trial|anonymous) (?:[\w-]+ ){0,3}(?:rate )?limit\b/,
      /\blimits?\b[^.\n]{0,40}\b(?:for|on|of) (?:the |your |a )?(?:free|trial|hobby|starter|basic|anonymous|unauthenticated) (?:tier|plan|account|key|users?|requests)\b/,
      /\b(?:for higher|without|increase your|raise your) (?:rate |usage )?limits\b/,
      /\b(?:hourly|daily|weekly|monthly|yearly|annual) (?:\w+ )?(?:limit|quota|allowance|cap)\b/,
      // More than the subscription allows, whatever status carries it.
      /\bexceeded\b[^.\n]{0,60}\b(?:allowed|included|permitted) (?:by|in|on|with|for) (?:your|the|this) (?:current )?(?:\w+ )?(?:subscription|plan|tier|licen[cs]e)\b/,
      // A limit counted per hour, day, month or billing period, whatever it is called (a rate
      // limit too): a window longer than a minute outlasts any backoff of a run
      // (`your plan allows 100 requests per month`, `rate limit: 1000 requests per hour`).
      /\b(?:requests|calls|queries|messages|emails|credits|searches|units|operations|tokens) (?:per|a|an|each|every) (?:hour|day|week|month|year|billing (?:period|cycle))\b/,
      /\b(?:limit|quota|allowance)\b[^.\n]{0,60}\b(?:per|each|every) (?:hour|day|week|month|year|billing (?:period|cycle))\b/,
      // The same window as a fraction: `limit exceeded: 100/1h`, `5000/day`.
      /\b(?:limit|quota)\b[^.\n]{0,40}\b\d+ ?\/ ?(?:1 ?)?(?:h|hr|hours?|d|days?|mo|months?)\b/,
    ),
  },
  // Rate limiting and throttling: waiting clears it.
  {
    ...RATE_LIMITED,
    pattern: oneOf(
      /\brate[- _]?limit/,
      /\btoo many requests\b/,
      /\bthrottl/,
      /\bslow ?down\b/,
      /\breduce (?:your )?(?:request|call) rate\b/,
      /\brate exceeded\b/,
      /\b(?:request|call|api|usage|concurrency) limit (?:exceeded|reached)\b/,
      /\btoo frequently\b/,
      /\bthroughput (?:\w+ ){0,6}exceeded\b/,
      /\bover (?:the )?query limit\b/,
      /\bresource exhausted\b/,
    ),
  },
  // A text that opens with a denial is about a right the caller lacks, whatever it says of tokens.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /^\W*(?:error:?\s*)?(?:permission denied|access denied|forbidden)\b/,
      /\blacks? (?:the )?[\w:.-]+ scopes?\b/,
    ),
  },
  // Missing, invalid or expired credentials: a person must log in or fix the configuration.
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\bunauthori[sz]ed\b/,
      /\bunauthenticated\b/,
      /\bnot authenticated\b/,
      /\bauthentication (?:failed|required|error|is required)\b/,
      /\bauthori[sz]ation (?:failed|failure)\b/,
      /\b(?:failed|unable|could not) to authenticate\b/,
      /\bauthentication scopes?\b/,
      /\binsufficient scopes?\b/,
      /\bnot logged in\b/,
      /\blogin required\b/,
      /\bjwt (?:expired|malformed|invalid)\b/,
      /\bmissing (?:required )?(?:oauth )?scopes?\b/,
      /\b(?:bad|invalid|missing|expired|revoked|incorrect|wrong|no) (?:\w+ )?credentials\b/,
      /\bcredentials (?:are |were |is )?(?:invalid|expired|missing|not found|incorrect|rejected)\b/,
      /\bconfigure (?:your )?(?:\w+ )?credentials\b/,
      /\binvalid (?:auth|grant|client)\b/,
      /\bnoauth\b/,
    ),
  },
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\b(?:invalid|missing|expired|revoked|incorrect|wrong|bad|no)\b[^.\n]{0,30}\bapi[- ]?keys?\b/,
      /\bapi[- ]?keys?\b[^.\n]{0,30}\b(?:invalid|missing|required|expired|revoked|not (?:valid|found|set|configured|provided))\b/,
      /\b(?:create|set|provide|configure|add) (?:an? |your |the )?(?:\w+ )?api[- ]?key\b/,
      /\b(?:access|auth|authentication|authori[sz]ation|bearer|security|oauth|refresh|session|api|personal access) token\b[^.\n]{0,60}\b(?:invalid|expired|revoked|missing|required|not (?:in )?(?:a )?valid)\b/,
      /\b(?:invalid|expired|revoked|missing|rejected)(?: (?:access|auth|authentication|authori[sz]ation|bearer|security|oauth|refresh|api))? token\b/,
      /\bno (?:\w+ )?(?:access|auth|authentication|authori[sz]ation|bearer|api) (?:token|key)\b/,
      /(?<!(?:page|next|cursor|continuation|sync|pagination|csrf) )\btoken (?:has |is |was )?(?:been )?(?:expired|revoked|invalid)\b/,
      /\bpassword authentication failed\b/,
    ),
  },
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\bre-?authori[sz]e\b/,
      /\bre-?authenticate\b/,
      /\b(?:log|sign) ?in (?:again|required|to continue)\b/,
      /\b(?:authori[sz]ation|session|login|credentials?) (?:has )?expired\b/,
      /\baccount\b[^.\n]{0,30}\b(?:inactive|disabled|suspended|deactivated|locked|banned|no longer valid)\b/,
      /\b(?:needs|requires) an? (?:\w+ )?account\b/,
    ),
  },
  // The caller is known but lacks the right: only an administrator can grant it.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /\bforbidden\b(?! (?:characters?|values?|fields?|keys?|names?|words?)\b)/,
      /\bpermission denied\b/,
      /\baccess denied\b/,
      /\bnot authori[sz]ed\b/,
      /\b(?:do|does) ?n[o']t have (?:the )?(?:required |necessary |sufficient |enough )?(?:permissions?|access|privileges?|rights?|roles?)\b/,
      /\b(?:don't|doesn't|lacks?) (?:the )?(?:required |necessary |sufficient |enough )?(?:permissions?|privileges?|access rights|roles?)\b/,
      /\binsufficient (?:permissions?|privileges?|rights|access)\b/,
      /\bmust be (?:the )?owner\b/,
      /\bnot (?:allowed|permitted) to (?:do|perform|access|read|write|modify|run|execute|use)\b/,
      /\bnot accessible\b/,
      /\bnot (?:a member|in (?:the )?channel)\b/,
      /\baccess restrictions?\b/,
      /\b(?:denied|blocked|prohibited|disallowed) by (?:\w+ ){0,2}polic(?:y|ies)\b/,
      /\bno (?:\w+ ){0,2}polic(?:y|ies) allows?\b/,
      /\b(?:violates|violation of) (?:\w+ ){0,3}polic(?:y|ies)\b/,
      /\bpolicy violation\b/,
    ),
  },
  // Read-only deployments and archived resources: writes there can never succeed.
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\bread[- ]?only (?:mode|file ?system|database|replica|transaction|access|session|server|instance|volume|account|user|role|repository|connection)\b/,
      /\breadonly database\b/,
      /\b(?:is|was|has been) archived\b/,
      /\barchived (?:repository|project|channel)\b/,
    ),
  },
  // A setting the server reads from its environment, missing: its operator sets it, unless the
  // text also offers an argument of the call that does the same (`Specify the userId or set
  // DESTINATION_USER_ID`, `the "appId" property is not provided`): then the model passes it.
  {
    ...INVALID,
    pattern: new RegExp(
      String.raw`\b(?:environment variables?|env(?:ironment)?[ _-]?vars?)\b[\s\S]{0,200}?${ARGUMENT_INSTEAD}|${ARGUMENT_INSTEAD}[\s\S]{0,200}?\b(?:environment variables?|env(?:ironment)?[ _-]?vars?)\b`,
      "i",
    ),
  },
  {
    ...MISCONFIGURED,
    pattern: oneOf(
      /\b(?:missing|set|configure|define|provide|export)\b[^.\n]{0,80}\b(?:environment variables|env(?:ironment)?[ _-]?vars?)\b/,
      /\b(?:environment variables|env(?:ironment)?[ _-]?vars?)\b[^.\n]{0,40}\b(?:missing|not set|required|not configured|not found|undefined|must be set)\b/,
    ),
  },
  // A name in capitals with an underscore that is not set is the server's environment
  // (`API_TOKEN is not set`, `PUBNUB_API_KEY must be set`); case-sensitive, so that an argument's
  // own name (`user_id is required`) does not read as one.
  {
    ...MISCONFIGURED,
    pattern:
      /\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b['"`]? (?:is |was |are )?(?:not set|not defined|not configured|undefined|missing|empty|must be (?:set|provided|defined))\b/,
  },
  // The server's own setup is wrong: an operator must change configuration and restart it.
  {
    ...MISCONFIGURED,
    pattern: oneOf(
      /\bmisconfigur/,
      /\b(?:configured|set up) (?:incorrectly|wrongly|improperly)\b/,
      /\b(?:incorrectly|wrongly|improperly) configured\b/,
      /\bnot (?:properly )?configured\b/,
      /\bconfiguration (?:error|issue|problem)\b/,
      /\benvironment variable\b/,
      /\brestart the server\b/,
      /\bserver (?:cannot|can't|is unable to) (?:operate|start|run)\b/,
      /\b(?:was )?started without\b/,
      /\bupdate (?:the|your) (?:server )?configuration\b/,
      /\breconnect (?:the|your|without|with)\b/,
      /\bstart a new session\b/,
      // Software the host lacks: a COM class not registered (the application is not installed).
      /\bclass not registered\b/,
      /\bREGDB_E_CLASSNOTREG\b/,
      // TLS trust the host lacks (a self-signed or expired certificate, an unknown issuer).
      /\bself[- ]signed certificate\b/,
      /\bcertificate verify failed\b/,
      /\bunable to (?:verify the first|get local issuer) certificate\b/,
      /\bcertificate (?:has )?expired\b/,
      /\b(?:CERT_HAS_EXPIRED|UNABLE_TO_VERIFY_LEAF_SIGNATURE|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_TLS_CERT_ALTNAME_INVALID)\b/,
      // The host's client cannot ask the user (no elicitation): its operator must change it.
      /\b(?:requires?|needs?) (?:form |url )?elicitation\b/,
      /\b(?:client|host) (?:that |which )?supports? (?:confirmations?|elicitation)\b/,
      /\b(?:client|host) does ?n[o']t support (?:confirmations?|elicitation)\b/,
      /\bdatabase "[^"\n]{1,80}" does not exist\b/,
      /\bno space left\b/,
      /\bdisk (?:is )?full\b/,
    ),
  },
  // The user declined a confirmation: asking again through the model is not the way.
  {
    ...c("not_approved", "stop", "failed"),
    pattern: oneOf(
      /\b(?:user|you) (?:did not|didn't|has not|have not) (?:confirm|approve|accept)/,
      /\b(?:declined|rejected|cancell?ed|denied) by (?:the )?user\b/,
      /\buser (?:declined|rejected|cancell?ed|denied)\b/,
      /\b(?:approval|confirmation|consent) (?:is )?required\b/,
      // A confirmation nobody gave: the model must not give it in a person's place.
      /\b(?:requires?|needs?|without|awaiting|pending|waiting for|missing) (?:an? |the )?(?:(?:explicit|prior|user|human|manual|written|owner) ){0,2}(?:confirmation|approval|consent|sign[- ]?off)\b/,
      /\b(?:has|have|was|were) not (?:yet )?been (?:confirmed|approved)\b/,
      /\b(?:was|were) not (?:confirmed|approved)\b/,
      /\bmust (?:first )?be (?:confirmed|approved) by\b/,
      /\bconfirm(?:ed)?['"`]?\s*[:=]\s*true\b/,
      /\b(?:pass|set|use|re-?run with|call (?:it )?again with|retry with) ['"`]?(?:confirm(?:ed|ation)?|force|i_understand|acknowledge(?:d)?)['"`]?\s*[:=]\s*['"`]?(?:true|yes|1)\b/,
    ),
  },
  // Person-only cues without a status (issue 27.3), general phrasings of who must act. A missing
  // permission scope, which only an administrator grants:
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /\bmissing (?:the |a |required )?['"`]?[\w:./-]+['"`]? (?:oauth |permission |api )?scopes?\b/,
      /\b(?:requires?|needs?) (?:the |an? )?(?:['"`][\w:./-]+['"`] |[\w:./-]+:[\w:./-]+ )(?:oauth |permission |api )?scopes?\b/,
      /\bscopes? (?:['"`][\w:./-]+['"`] |[\w:./-]+:[\w:./-]+ )?(?:is |are |was |were )?(?:required|missing|not granted|needed)\b/,
      /\b(?:lacks?|without) (?:the )?['"`][\w:./-]+['"`] (?:\w+ )?scopes?\b/,
      /\b(?:an? |your |the |workspace |org(?:ani[sz]ation)? )*admin(?:istrator)?s? (?:must|needs? to|has to|have to|should|can|will need to) (?:first )?(?:grant|approve|enable|install|authori[sz]e|allow|add|assign|give)\b/,
      /\b(?:admin(?:istrator)?|owner|organi[sz]ation) (?:has |have )?(?:disabled|restricted|blocked|turned off)\b/,
      /\brequires? (?:an? )?(?:admin(?:istrator)?|owner|elevated|root) (?:privileges?|rights|access|permissions?|role)\b/,
      /\b(?:app|application|integration|bot|plugin) (?:is |has )?not (?:been )?(?:installed|authori[sz]ed|added) (?:in|on|to|for)\b/,
      /\bneeds? to be granted\b/,
    ),
  },
  // A mode or a policy that restricts the caller: a person changes the setting, not the model.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /\b(?:is|are|running|runs|operating|configured|set|currently) (?:currently )?(?:in|to|under) (?:a |the )?(?:safe|restricted|read[- ]?only|view[- ]?only|locked|guest|lockdown|audit|observer|viewer|dry[- ]?run|plan[- ]only) mode\b/,
      /\b(?:disabled|blocked|not (?:allowed|permitted|available)) (?:in|under|while in|during) (?!maintenance\b)(?:\w+[- ]){0,2}mode\b/,
      /\bmode (?:does not|doesn't|do not|don't) (?:allow|permit)\b/,
      /\b(?:restricted|prohibited|blocked|prevented|disabled) by (?:your |the |an? )?(?:\w+ ){0,2}(?:administrator|admin|organi[sz]ation|workspace|security|tenant|account)s?\b/,
      /\b(?:organi[sz]ation|workspace|admin|administrator|security|tenant|account|team|company|domain) (?:polic(?:y|ies)|settings?|rules?) (?:prevents?|prohibits?|blocks?|restricts?|forbids?|(?:does|do) ?n[o']t (?:allow|permit)|(?:has|have) (?:disabled|blocked|restricted|turned off))\b/,
      /\b(?:disabled|not (?:allowed|permitted)) (?:in|for|on) (?:this|the current|your) (?:environment|deployment|instance|workspace|organi[sz]ation|project|tenant)\b/,
    ),
  },
  // The state of a plan, a payment or a budget: money or a person lifts it, not waiting.
  {
    ...QUOTA,
    pattern: oneOf(
      /\b(?:subscription|plan|trial|invoice|billing|payment method|card)\b[^.\n]{0,30}\b(?:past due|overdue|unpaid|expired|has ended|declined|delinquent|on hold|suspended|cancell?ed)\b/,
      /\b(?:card|payment) (?:was |has been )?declined\b/,
      /\bplan (?:does ?n[o']t|do ?n[o']t|doesn't) (?:include|allow|permit|support|cover)\b/,
      /\b(?:exceeds?|exceeded|over|reached|hit) (?:your |the |its |this )?(?:current )?(?:plan'?s?|subscription'?s?|account'?s?) (?:\w+ ){0,2}(?:limit|allowance|quota|cap)\b/,
      /\b(?:session|conversation|plan|monthly|daily|weekly|account|usage|spend(?:ing)?|cost|token|credit) (?:\w+ )?(?:budget|allowance|cap)s? (?:has been |have been |was |is |are )?(?:exceeded|exhausted|spent|used up|reached|depleted|hit)\b/,
      /\b(?:exceeded|exhausted|spent|used up|reached|depleted) (?:your |the |its |this |their )?(?:\w+ ){0,2}(?:budget|allowance)\b/,
      /\bbudget (?:has been |was |is )?(?:exceeded|exhausted|spent|used up|depleted)\b/,
      /\bno (?:remaining|more) (?:credits|budget|tokens|minutes|allowance)\b/,
      /(?<!rate[ _-]?)\b(?:limit|quota|allowance|budget|credits?)\b[^.\n]{0,40}\b(?:for|of) (?:this|the|your) (?:month|billing (?:period|cycle)|plan|session|conversation|subscription)\b/,
      /\bupgrade to (?:a |the )?(?:\w+ ){0,2}(?:plan|tier|subscription|pro|premium|business|enterprise|team)\b/,
      /\b(?:on|using) (?:the|a|your) free (?:plan|tier)\b/,
      /\b(?:outstanding|overdue|unpaid) (?:balance|invoices?|payments?|bills?)\b/,
      /\bbilling (?:issue|problem|hold)\b/,
      /\b(?:no (?:available |free )?seats?|seat limit|out of seats|licen[cs]e (?:has )?(?:expired|limit|required))\b/,
    ),
  },
  // Credentials rejected or missing, in words and no status.
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\bcredentials? (?:(?:was|were|is|are|have been|has been) )?(?:rejected|refused|denied|not accepted|not (?:set|configured|provided|supplied))\b/,
      /\b(?:authentication|auth|login|sign[- ]?in) (?:attempt )?(?:was |has been )?(?:rejected|refused|denied|declined|unsuccessful)\b/,
      /\bno (?:credentials|auth(?:entication)?|api[- ]?key|access token|token) (?:was |were )?(?:provided|supplied|configured|found|set|given)\b/,
      /\b(?:signature|request signature) (?:does ?n[o']t match|mismatch|is invalid|invalid)\b/,
      /\bnot (?:signed|logged) in\b/,
      /\bmust (?:be (?:logged|signed) in|authenticate|log ?in|sign ?in)\b/,
      /\bplease (?:log|sign) ?in\b/,
      /\b(?:could not|unable to|failed to) (?:validate|verify) (?:your |the )?(?:credentials|token|api[- ]?key)\b/,
      /\b(?:connect|link|reconnect|re-?link) (?:your|the) (?:\w+ ){0,2}account\b/,
    ),
  },
  // An account, workspace or organization in a state only a person changes.
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:account|workspace|organi[sz]ation|tenant|team|merchant)\b[^.\n]{0,30}\b(?:(?:is|has been|was) (?:frozen|on hold|restricted|closed|paused|under review|pending (?:review|approval|activation|verification))|(?:is|was|has|has been) not (?:yet )?(?:been )?(?:active|activated|approved|onboarded))\b/,
      // The text tells the agent to ask a person: the user, an administrator, an owner, a named team.
      /\b(?:ask|contact|reach out to|talk to|check with|consult|escalate to|get in touch with) (?:your |the |an? |their |a member of (?:the |your )?)?(?:\w+[- ]){0,3}(?:user|admin(?:istrator)?s?|owner|manager|team|department|approver|finance|billing|sales|account (?:manager|owner|executive)|it|helpdesk|help desk)\b(?![^.\n]{0,40}\bif (?:the |this |it )?(?:problem|issue|error|failure|it)?\s*(?:persists?|continues?|keeps|happens again)\b)(?<!\bif (?:the |this )?(?:problem|issue|error|failure)s? (?:persists?|continues?)[^.\n]{0,40})/,
      /\bcontact (?:\w+ )?support (?:to|for) (?:enable|unlock|increase|raise|activate|upgrade|request|grant|get access|lift|remove|reactivate)\b/,
      /\b(?:requires?|needs?) (?:an? |the )?(?:user|human|person|manual|admin(?:istrator)?|owner|manager)(?:'s)? (?:action|input|intervention|approval|review)\b/,
      /\bonly (?:an? |the |your )?(?:\w+ )?(?:admin(?:istrator)?s?|owners?|managers?|team|user) (?:can|may|is allowed to|are allowed to)\b/,
      /\bthe user (?:must|needs to|has to|should) (?:\w+ ){0,3}(?:approve|confirm|grant|authori[sz]e|log ?in|sign ?in|connect|enable|provide|verify|accept)\b/,
      /\bhave (?:your|the|an?) (?:\w+ )?(?:admin(?:istrator)?|owner|manager|supervisor) (?:\w+ ){0,2}(?:approve|grant|enable|review)\b/,
      /\b(?:workspace|organi[sz]ation|tenant|team|project|merchant)\b[^.\n]{0,30}\b(?:is|has been|was) (?:disabled|deactivated|suspended|locked|blocked|inactive)\b/,
    ),
  },
  // More person-only cues (issue 27.3), general phrasings: a flag or a mode only the operator
  // sets, a right named by its level, access blocked or revoked, consent or terms nobody gave.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /(?:\b(?:without|requires?|needs?|pass|set|enable|restart (?:\w+ ){0,2}with|start(?:ed)? (?:\w+ ){0,2}with)|\bthe) (?:the )?['"`]?--?allow[-_][\w-]+/,
      /\b(?:requires?|needs?|only (?:available|allowed|permitted|works) in) (?:an? |the )?(?:write|writable|admin|edit|unsafe|destructive|live|production|full[- ]access|elevated|privileged|developer|expert) mode\b/,
      /\b(?:writes?|write (?:operations?|access|tools?|queries|statements)|mutations?|mutating (?:operations?|tools?)|destructive (?:operations?|actions?|tools?)|modifications?|deletions?) (?:(?:are|is|was|were|has been|have been) )?(?:currently )?(?:disabled|not (?:allowed|permitted|enabled)|blocked|forbidden|turned off|prohibited)\b/,
      /\bmust have (?:the )?(?:admin(?:istrator)?|owner|write|push|maintain|manage|edit|read|billing) (?:rights|access|permissions?|privileges?|role)\b/,
      /\b(?:admin(?:istrator)?|owner|write|elevated) (?:permissions?|privileges?|access|rights) (?:is |are )?required\b|\b(?:permissions?|privileges?) (?:is |are )?required (?:to|for)\b/,
      /\b(?:unavailable|not available|not supported|not offered|not permitted|restricted) (?:in|for|from) (?:your|this|the user'?s?|the caller'?s?) (?:country|region|location|territory|area|jurisdiction)\b/,
      /\brequires? (?:the |an? )?['"`]?[\w:.-]{1,40}(?: [\w:.-]{1,20})?['"`]? (?:role|entitlement|licen[cs]e|seat)\b/,
      /\bmust be an? (?:admin(?:istrator)?|owner|member|maintainer|manager|moderator|collaborator|org(?:ani[sz]ation)? (?:admin|owner|member))\b/,
      /\b(?:do|does) ?n[o']t have (?:the )?(?:required |necessary |sufficient |needed )?(?:oauth |api )?scopes?\b/,
      /\baccess (?:to (?:this |the |your )?[\w .-]{1,40} )?(?:is |was |has been )?(?:blocked|restricted|revoked|suspended|disabled)\b/,
      /\b(?:has|have) not (?:yet )?(?:been )?consented\b/,
      /\b(?:admin(?:istrator)?|user|tenant|organi[sz]ation) consent\b/,
      /\bscopes? (?:is |are )?(?:insufficient|not sufficient)\b/,
    ),
  },
  // A lockout after failed attempts to sign in: the credentials keep failing, and waiting only
  // lets the same ones fail again. A person must look, whatever the text says of trying again.
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\btoo many (?:failed|unsuccessful|invalid|incorrect|wrong|bad) (?:[\w-]+ ){0,2}(?:attempts|tries|logins|sign-?ins)\b/,
      /\btoo many (?:login|log-in|sign-?in|authentication|auth|password|pin|otp|verification) (?:\w+ )?(?:attempts|tries|failures)\b/,
    ),
  },
  // Credentials that are not found are not a thing the model names: a person signs in. And a
  // scraper whose page changed under it: the server needs an update, no argument helps.
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\b(?:authentication|auth|login|credentials?|api[- ]?key|access token|auth token|bearer token) (?:was |were |is |are )?(?:not found|not available|unavailable)\b/,
    ),
  },
  {
    ...MISCONFIGURED,
    pattern: oneOf(
      /\b(?:page|site|html|dom|markup|layout) (?:structure|layout|format|markup) (?:may have|might have|has|have|probably) (?:been )?changed\b/,
    ),
  },
  // Credentials that are not there or not taken, in other words; a second factor only a person has.
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\bnot authed\b/,
      /\b(?:authori[sz]ation|auth|x-api-key|api[- ]key|bearer) header\b[^.\n]{0,30}\b(?:missing|required|invalid|malformed|not (?:set|provided|found|present))\b|\b(?:missing|no|invalid|malformed) (?:\w+ )?(?:authori[sz]ation|auth|bearer) header\b/,
      /\brequires? (?:user |an? |valid )?(?:authentication|login|sign[- ]in|an authenticated (?:user|session))\b/,
      /\binvalid (?:request |webhook )?signature\b/,
      /\b(?:invalid|expired|revoked) (?:user |login |auth )?session\b|\b(?:user |login |auth )?session (?:is |has )?(?:invalid|revoked|no longer valid)\b/,
      /\bmust be (?:authenticated|authori[sz]ed)\b/,
      /\bauth(?:entication)? failure\b/,
      /\b(?:two[- ]factor|2fa|mfa|multi[- ]factor|second[- ]factor)\b[^.\n]{0,40}\b(?:required|needed|enabled|pending|set ?up)\b/,
      /\b(?:api[- ]?key|access token|auth(?:entication|ori[sz]ation)? token|bearer token|credentials|client secret|secret key|personal access token)\b[^.\n]{0,40}\b(?:rejected|refused|not accepted|not recogni[sz]ed|unrecogni[sz]ed|(?:is )?not valid|no longer valid|deactivated|disabled)\b/,
    ),
  },
  // More person-only cues in words (issue 27.3): credentials the service does not know or a
  // signature it does not accept (a wrong secret, whatever words stand between), credentials the
  // server cannot load, a host clock too far off, a problem with the account, a wait for a person
  // that ran out, a sign-in that must come first, recipients who opted out or were suppressed,
  // and a limit that resets only the next day or later. They outrank the argument-like and
  // transient wording they carry ("does not exist", "does not match", "too large", "timed out").
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\b(?:access key(?: id)?|key id|secret (?:access )?key|client id|client secret|api[- ]?key|credentials?)\b[^.\n]{0,40}\b(?:does ?n[o']t exist|not recogni[sz]ed|unrecogni[sz]ed|(?:is )?not valid)\b/,
      /\bdoes ?n[o']t exist in our records\b/,
      /\bsignature\b[^.\n]{0,40}\b(?:does ?n[o']t match|did ?n[o']t match|mismatch)\b/,
      /\bsignature (?:has )?expired\b/,
      /\b(?:could ?n[o']t|unable to|failed to|cannot|can't) (?:load|find|locate|obtain|resolve|read|get|retrieve|refresh) (?:any |the |valid |your )?(?:\w+ )?credentials\b/,
      /\b(?:authenticate|authori[sz]e|log ?in|sign ?in|run (?:the )?(?:authentication|auth|login|sign[- ]in)(?: flow| process| command)?) first\b/,
      /\bno authenticated (?:accounts?|users?|sessions?|clients?|connections?)\b/,
      /\b(?:session|token|access|credentials?|api[- ]?key|grant|consent|authori[sz]ation)s? (?:(?:was|were|has been|have been|is|are) )?(?:revoked|withdrawn)\b/,
    ),
  },
  // A right the caller lacks, named by who holds it or what the caller's key may do: an action
  // reserved to owners or admins, a read-only key or role, a lock an administrator set, an IP not
  // on the allowlist.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /\bonly (?:an? |the |your )?(?:\w+ )?(?:admin(?:istrator)?s?|owners?|managers?|maintainers?|moderators?|creators?|authors?)\b(?: of [^.\n]{1,40}?)? (?:can|may|is allowed to|are allowed to|is permitted to|are permitted to)\b/,
      /\b(?:restricted|limited|reserved) to (?:the |an? )?(?:\w+ ){0,2}(?:admin(?:istrator)?s?|owners?|managers?|maintainers?|moderators?)\b/,
      /\b(?:api[- ]?key|access token|token|credentials?|role|seat)\b[^.\n]{0,30}\b(?:is |are )?(?:read[- ]?only|view[- ]?only)\b(?! (?:field|attribute|property|column|parameter)s?\b)/,
      /\b(?:do|does) ?n[o']t have (?:write|read|edit|admin|push|delete|owner|manage|management) (?:access|permissions?|rights|privileges?)\b/,
      /\blocked by (?:an? |the |your )?(?:admin(?:istrator)?|owner|organi[sz]ation|policy|compliance|legal hold)\b/,
      /\b(?:ip|ip address|client ip|source ip)\b[^.\n]{0,40}\b(?:not (?:on|in) (?:the |an? |your )?(?:\w+ )?(?:allow ?list|whitelist|allowed list)|not (?:allowlisted|whitelisted))\b/,
    ),
  },
  // A count the plan or the workspace allows, reached (projects, seats, members).
  {
    ...QUOTA,
    pattern: oneOf(
      /\b(?:reached|exceeded|hit) (?:the |your )?(?:maximum|max|limit)\b[^.\n]{0,60}\b(?:allowed|permitted|included|available) (?:on|in|for|with|by) (?:your|the|this) (?:current )?(?:\w+ )?(?:plan|tier|subscription|account|workspace|organi[sz]ation|team)\b/,
      /(?<!rate[ _-]?)\blimit (?:has been |was )?(?:reached|exceeded|hit) (?:for|on|in) (?:your|this|the) (?:current )?(?:\w+ )?(?:plan|tier|subscription|account|workspace|organi[sz]ation|team)\b/,
      /\b(?:number|maximum|max|limit) of (?:allowed |available |licen[cs]ed |paid )?seats\b/,
      /\bnot (?:available|allowed|permitted|supported) (?:for|to|on|in) (?:the )?(?:free|trial|basic|starter|hobby|unpaid|unverified) (?:accounts?|plans?|tiers?|users?|subscriptions?)\b/,
    ),
  },
  {
    ...MISCONFIGURED,
    pattern: oneOf(
      /\brequest ?time ?too ?skewed\b/,
      /\bdifference between the request time and the (?:current|server) time\b/,
      /\bclock (?:skew|is (?:out of sync|too far|not in sync))\b/,
    ),
  },
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:problem|issue) with (?:your|the|this) (?:\w+ )?(?:account|subscription|billing|organi[sz]ation)\b/,
      /\b(?:timed out|time ?out|expired|gave up|deadline exceeded|no (?:response|answer))\b[^.\n]{0,20}?\bwaiting for (?:the |a |an )?(?:\w+ )?(?:user|human|person|operator|owner|admin(?:istrator)?|manager|approver|reviewer|approval|confirmation|consent|authori[sz]ation|sign[- ]?in|login|otp|one[- ]time (?:code|password)|verification(?: code)?|2fa|mfa|two[- ]factor (?:code|approval)|push (?:approval|notification)|(?:user|human)(?:'s)? (?:input|response|reply|approval|confirmation))\b/,
      // The customer or the user did not finish a step only they can take (a 3-D Secure
      // challenge, a push approval, a sign-in).
      /\b(?:user|customer|payer|cardholder|account holder|approver|owner) (?:did not|didn't|has not|hasn't|failed to|never) (?:complete|respond|approve|confirm|authenticate|authori[sz]e|finish|answer|accept)\b/,
      /\b3-?d ?secure\b|\b3ds\b[^.\n]{0,30}\b(?:required|failed|challenge|authentication)\b/,
      /\b(?:approval|confirmation|consent|authori[sz]ation) (?:request|prompt|dialog)s? (?:has |have )?(?:timed out|expired)\b/,
      /\bexpired before the (?:user|owner|approver|admin(?:istrator)?) (?:approved|confirmed|authori[sz]ed|responded|accepted)\b/,
    ),
  },
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\b(?:recipients?|address(?:es)?|e-?mails?|phone numbers?|numbers?|contacts?|subscribers?|members?)\b[^.\n]{0,60}\b(?:(?:has|have|had) (?:been )?)?(?:unsubscribed|opted[- ]out|suppressed|blocklisted|blacklisted|marked as (?:inactive|spam|bounced)|hard[- ]bounced)\b/,
      /\b(?:unsubscribed|opted[- ]out|suppressed|inactive|blocklisted|blacklisted|bounced) (?:recipients?|address(?:es)?|e-?mails?|numbers?|contacts?|members?|subscribers?)\b/,
    ),
  },
  {
    ...QUOTA,
    pattern: oneOf(
      /\btry again (?:tomorrow|next (?:day|week|month|billing (?:period|cycle))|in \d+ (?:hours?|days?)|after (?:midnight|the (?:reset|next billing)))\b/,
      /\b(?:limits?|quotas?|allowances?|credits?|budgets?) (?:will )?(?:resets?|renews?|refresh(?:es)?) (?:tomorrow|daily|monthly|(?:at|on) (?:midnight|00:00|the (?:first|start|beginning|1st))|next (?:day|week|month|billing)|in \d+ (?:hours?|days?))\b/,
      /\b(?:limit|quota|allowance|cap)\b[^.\n]{0,40}\b(?:for|of) today\b|\btoday'?s (?:limit|quota|allowance)\b/,
    ),
  },
  // A state of a payment, an order or a subscription that no argument changes.
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\b(?:cannot|can't|can not|unable to) (?:be )?(?!(?:find|found|locate|located|get|fetch|load|read|open|resolve|access|see|retrieve|view|list)\b)(?:\w+ ){1,2}(?:an? |the |this |that )?(?:already )?(?:published|archived|locked|closed|merged|finali[sz]ed|paid|cancell?ed|completed|submitted|approved|signed|shipped|refunded|voided|frozen|settled|posted|fulfilled)\b(?! (?:by|with|from|to|in|on|at)\b)/,
      /\b(?:has |have |was |were |is |are )?already (?:been )?(?:fully )?(?:refunded|captured|voided|reversed|disputed|settled|finali[sz]ed|fulfilled|shipped|charged back)\b/,
      // A business record locked by a rule of the domain (a closed period, an approved invoice),
      // not by another writer: waiting does not unlock it, a person does.
      /\b(?:period|invoice|bill|order|contract|journal|ledger|payment|card|user|member|submission|booking|reservation|timesheet|quote|estimate|budget|month|quarter|year)s?\b[^.\n]{0,30}\b(?:is|are|was|were|has been|have been) (?:permanently |currently |now )?locked\b(?! (?:by|for) (?:another|other|a different) )/,
    ),
  },
  // More states and people: a project or store paused or under review, an action only a person
  // takes (a payer, the dashboard), terms to accept, an approval still pending.
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:account|workspace|organi[sz]ation|tenant|team|merchant|project|site|store|shop|portal|company|business|seller)s?\b[^.\n]{0,30}\b(?:is|are|has been|have been|was|were) (?:currently |temporarily )?(?:suspended|frozen|paused|on hold|banned|deactivated|restricted|under review|pending (?:review|approval|activation|verification))\b/,
      /\b(?:payer|buyer|customer|user|human|manual|owner|admin(?:istrator)?|account holder) (?:action|interaction|input|intervention|approval|verification) (?:is |was )?(?:required|needed|pending)\b/,
      /\b(?:accept|agree to) (?:the |our )?(?:(?:updated|new|latest) )?(?:terms|license|licence|agreement|tos|eula|policy)\b/,
      /\b(?:terms|license|licence|agreement|tos|eula)\b[^.\n]{0,30}\b(?:must be|has not been|have not been|not (?:yet )?(?:been )?)accepted\b/,
      /\b(?:is|was|are|were|has|have) not (?:yet )?(?:been )?approved\b/,
      /\b(?:awaiting|pending|requires?) (?:\w+ )?(?:approval|review|verification) (?:by|from) (?:an? |the |your )?(?:\w+ )?(?:admin(?:istrator)?|owner|manager|user|team|reviewer|approver)s?\b/,
      /\b(?:email|e-mail|account|phone|user) (?:address |number )?(?:is |has )?not (?:yet )?(?:been )?confirmed\b/,
      /\bunverified (?:\w+ )?(?:phone|numbers?|recipients?|emails?|e-mail|addresses|users?|callers?)\b/,
      /\btrial (?:accounts?|users?|plans?|versions?|periods?|keys?)\b[^.\n]{0,40}\b(?:cannot|can't|can only|may only|limited|not allowed|expired|ended|over)\b/,
      /\b(?:only (?:be )?(?:done|performed|changed|managed|configured|possible)|must be (?:done|performed|changed|managed|configured|enabled)|can be (?:done|changed|enabled|managed) only) (?:in|via|through|from|using|on) (?:the |your )?(?:\w+ )?(?:dashboard|console|web ?(?:ui|app|interface)|ui|portal|admin (?:panel|console|center|centre)|settings page|website)\b/,
      /^\W*(?:\w+ ){0,2}declined by (?:the )?(?:user|owner|approver|reviewer|admin(?:istrator)?)\b|^\W*(?!context\b)(?:\w+ ){0,2}(?:declined|cancell?ed by (?:the )?user|cancell?ed)\.?\s*$/,
    ),
  },
  // Checks only a person passes: an identity to verify (KYC), reviews or approvals a change
  // needs before it goes in.
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:kyc|know[- ]your[- ]customer|identity verification|id verification)\b[^.\n]{0,40}\b(?:required|pending|needed|incomplete|failed|not (?:yet )?(?:completed|verified|approved))\b/,
      /\b(?:complete|pass|finish) (?:the |your )?(?:kyc|identity verification|id verification)\b/,
    ),
  },
  {
    ...c("not_approved", "stop", "failed"),
    pattern: oneOf(
      /\b\d+ (?:approving )?(?:reviews?|approvals?) (?:are |is )?(?:required|needed)\b/,
      /\bapproving reviews? (?:are |is )?(?:required|needed)\b/,
      /\brequires? (?:\w+ ){0,2}(?:approving reviews?|approvals)\b/,
    ),
  },
  // Money the account lacks for the request (margin, buying power, a balance or credit limit),
  // and a size over what the plan allows: only money or a person lifts it.
  {
    ...QUOTA,
    pattern: oneOf(
      /\binsufficient (?:margin|buying power|allowance|collateral|available balance)\b/,
      /\b(?:buying power|margin|available balance|credit limit|spending limit)\b[^.\n]{0,40}\b(?:exceeded|insufficient|not enough|too low)\b/,
      /\b(?:exceeds?|exceeding|over|above|more than)\b[^.\n]{0,40}\b(?:buying power|available margin|available balance|credit limit)\b/,
      /\b(?:too (?:large|big|long|many)|exceeds?|exceeding|over)\b[^.\n]{0,40}\bfor (?:your|the (?:free|current)) (?:current )?(?:\w+ )?(?:plan|tier|subscription)\b/,
    ),
  },
  // Budgets of a session, a run or a conversation, and allowances used up.
  {
    ...QUOTA,
    pattern: oneOf(
      /\b(?:session|conversation|run|agent|thread|workflow) (?:[\w-]+ ){0,2}(?:limit|budget|cap|allowance|maximum)s? (?:of [\w.]+ )?(?:has been |have been |was |is |are )?(?:reached|exceeded|exhausted|hit|spent|used up)\b/,
      /\bno (?:active|valid|paid|current) (?:subscription|plan|licen[cs]e)s?\b/,
      /\b(?:spend(?:ing)?|billing|cost|hard|budget|credit|monthly|account) limit (?:has been |was |is )?(?:reached|exceeded|hit)\b|\b(?:reached|exceeded|hit) (?:your |the |its )?(?:spend(?:ing)?|billing|cost|hard|budget|credit|monthly|account) limit\b/,
      /\b(?:premium|paid|pro|enterprise|business|team)[- ](?:only )?features?\b/,
      /(?:\bnot|n't) (?:available|included) (?:on|in|with) (?:your|the (?:free|current)) (?:\w+ )?(?:plan|tier|subscription)\b/,
      /\b(?:maximum|max) (?:number of )?[\w ]{1,30} (?:reached|exceeded)\b[^.\n]{0,30}\b(?:plan|tier|subscription)\b/,
      /\bused (?:up )?(?:all|every one) (?:of )?(?:your|the|its|this (?:\w+ )?'?s?) (?:\w+ ){0,2}(?:credits|requests|queries|minutes|searches|tokens|calls|quota|allowance|runs|units|messages|generations)\b/,
      /\b(?:maximum|max) (?:number of )?(?:calls|requests|tool calls|turns|steps|messages|queries|searches|runs) (?:per|for) (?:this |the |a |each )?(?:session|conversation|run|thread|day|month)\b[^.\n]{0,20}\b(?:reached|exceeded|hit)\b/,
    ),
  },
  // Failures only a person can fix, in the words of their class rather than a status (issue 27.3).
  // They outrank the status, argument and transient wording they arrive with (`400`, `409`,
  // `503`, "invalid", "not found"). Credentials: a login to run, a username or password or a key
  // the service rejects, a key it does not know, a secret store that is sealed or locked.
  {
    ...UNAUTHORIZED,
    pattern: oneOf(
      /\b(?:run|use|try) ['"`]?[\w.-]+(?: auth)? (?:login|log ?in|auth)['"`]?/,
      /\bplease (?:log ?in|sign ?in|authenticate)\b/,
      /\b(?:incorrect|invalid|wrong|bad) (?:username|user ?name|user|login|e-?mail) (?:or|and|\/) password\b/,
      /\b(?:api[- ]?key|access[- ]?key(?: id)?|secret[- ]?key|auth(?:entication)? token|access token|credentials?)\b[^.\n]{0,20}\b(?:looks|appears|seems) (?:to be )?(?:malformed|invalid|wrong|incorrect)\b/,
      /\b(?:invalid|expired|revoked) or (?:invalid|expired|revoked) (?:[\w-]+ ){0,2}(?:token|api[- ]?key|credentials?)\b/,
      /\b(?:specified|provided|given|configured|supplied|your) (?:access[- ]?key(?: id)?|api[- ]?key|secret[- ]?key|key id) (?:is |was )?not found\b/,
      /\b(?:vault|keystore|key store|keychain|secret store|wallet) is (?:sealed|locked)\b/,
    ),
  },
  // Something of the account or the deployment only a person sets up: a wallet, an account or an
  // integration to connect, a service to enable in a console, a limit of the plan, space the
  // account has run out of.
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:ensure|make sure|check) (?:that )?(?:your|the) (?:[\w-]+ ){0,2}(?:wallet|account|device|integration|app|workspace) is (?:connected|linked|configured|installed|set up|enabled)\b/,
      /\b(?:enable|activate|turn on|configure) (?:it |this |them |the [\w -]{1,30}?)?(?:from|in|via|on|through) (?:the |your )?(?:[\w-]+ )?(?:console|dashboard|admin (?:panel|portal|console|ui)|settings page|control panel)\b/,
      /\bno [\w -]{0,30}\bintegrations? (?:is |are )?(?:configured|set up|connected|installed)\b/,
      /\b(?:requested |this )?(?:service|feature|integration|plugin|module|api) (?:is|has been) disabled\b[^\n]{0,80}\b(?:enable|console|dashboard|settings|admin)/,
    ),
  },
  {
    ...QUOTA,
    pattern: oneOf(
      /\bplan limit\b/,
      /\blimit (?:of|for|on) (?:your|this|the) (?:[\w'-]+ ){0,3}plan\b/,
      /\binsufficient (?:storage|space|disk space|storage space)\b/,
      /\b(?:storage|disk|space|drive) quota\b/,
      /\bquota limit (?:reached|exceeded|hit)\b/,
      /\bnumber of [\w -]{1,30} cannot exceed \d+\b[^.\n]{0,30}\balready (?:have|has|contains?)\b/,
    ),
  },
  // The agent is told to ask the user (not "contact support if it persists", which transient
  // failures say too).
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:ask|prompt|inform|tell|notify|check with|confirm with|consult) (?:the )?(?:end[- ])?user\b/,
    ),
  },
  // A state of the record that no argument changes: already signed, applied or closed, the last
  // admin, only drafts may go.
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\balready (?:been )?(?:signed|applied|approved|merged|published|finali[sz]ed|submitted|closed|completed|resolved|paid|settled|archived)\b[^.\n]{0,40}\b(?:cannot|can't|can ?not|may not|must not)\b/,
      /\b(?:cannot|can't|can ?not) (?:remove|delete|demote|downgrade) the (?:last|only|sole) (?:remaining )?(?:[\w-]+ )?(?:admin(?:istrator)?|owner)s?\b/,
      /\bonly (?:\w+ ){0,2}(?:or \w+ )?[\w-]+s? can be (?:deleted|modified|edited|changed|cancell?ed|updated|removed|withdrawn)\b/,
    ),
  },
  // More of the same classes: a scope the token lacks, something to set up on the account, a
  // store that is read-only, a TLS certificate nobody in the loop can make trusted, a balance the
  // amount exceeds, a record managed elsewhere or locked by a person, a delete that would take
  // its contents with it, nothing left to do.
  {
    ...FORBIDDEN,
    pattern: oneOf(
      /\brequires? (?:the )?(?:oauth |api |token )?scope(?:\(s\)|s)?\b(?! (?:parameter|argument|field|property|option)\b)/,
      /\b(?:bucket|database|db|repository|repo|project|account|workspace|store|volume|file ?system|table|cluster|instance|site|space|vault|namespace)\b[^.\n]{0,40}\b(?:is|are) (?:now |currently )?read[- ]?only\b/,
    ),
  },
  {
    ...c("person_required", "stop", "failed"),
    pattern: oneOf(
      /\b(?:is|are) not (?:a |an )(?:verified |confirmed )?(?:[\w-]+ ){1,4}(?:on|in|of|for) your (?:account|organi[sz]ation|workspace)\b/,
      /\bunless (?:you|the user) (?:enters?|provides?|supplies|supply) (?:the |a |your )?(?:[\w-]+ )?(?:password|passphrase|passcode|pin)\b/,
      /\b(?:is|was) locked\b[^.\n]{0,30}\bunlock (?:it|them|the)\b/,
    ),
  },
  {
    ...MISCONFIGURED,
    pattern: oneOf(
      /\bERR_CERT_[A-Z_]+\b/,
      /\bcertificate (?:has expired|is not trusted|verify failed|verification failed)\b/,
      /\bself[- ]signed certificate\b/,
      /\bunable to verify the first certificate\b/,
    ),
  },
  { ...QUOTA, pattern: /\bexceeds? (?:the |your |its |account |wallet |available )?balance\b/i },
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\b(?:cannot|can't|can not) be (?:changed|modified|edited|deleted|removed|updated)\b[^.\n]{0,60}\bmanaged by\b/,
      /\b(?:cannot|can't|can not|unable to) delete (?:a |an |the )?(?:non[- ]?empty\b|[\w -]{1,40}?\b(?:that|which) (?:has|have|contains?|still has|is (?:published|in use|referenced)))/,
      /\bno changes to (?:commit|apply|deploy|push|save|publish)\b/,
      /\bnothing to (?:commit|deploy|publish|apply)\b/,
    ),
  },
  // A write whose outcome the server says is unknown: only a look at the target tells whether
  // it happened, so nobody in the loop sends it again.
  {
    ...c("partial_success", "stop", "unknown"),
    pattern: oneOf(
      /\b(?:may|might|could) (?:already )?have (?:been )?(?:carried out|applied|completed|succeeded|created|processed|taken effect|gone through|been sent)\b/,
      /\bcheck (?:whether|if) it (?:took|has taken) effect\b/,
    ),
  },
  // A value the model chose that is taken or gone (a slot, a seat, a name, a quantity), not a
  // feature of the service: it picks another value. Neither an outage nor another tool.
  {
    ...CONFLICT,
    pattern: oneOf(
      /\b(?:selected|requested|chosen|specified|given) (?!(?:service|server|api|endpoint|resource|operation|feature|functionality|url|page|site|host|backend|model|method|version|region|tool)s?\b)(?:[\w-]+ ){0,3}(?:is|are|was|were) (?:currently )?(?:no longer available|not available|unavailable|already taken|taken|sold out|fully booked)\b/,
      /\b(?:unavailable|not available) (?:in|for|at) the (?:requested|selected|specified|given|chosen) (?:[\w-]+ )?(?:quantity|amount|date|time|slot|size|dates|times|period)\b/,
    ),
  },
  // An operation this deployment, version or server does not offer: another tool may.
  {
    ...NOT_SUPPORTED,
    pattern: oneOf(
      /\b(?:operation|method|action|feature|functionality|endpoint|capability|rpc)s? ['"`]?[\w./:-]{1,60}['"`]? (?:is |are )?(?:not (?:yet )?(?:supported|implemented)|unsupported)\b/,
      /\b(?:feature|functionality|capability|operation|endpoint)s? (?:is |are )?(?:not|no longer) (?:available|supported|offered)\b(?! (?:for|on|in|to) (?:your|this|the current) )/,
      /\bno longer (?:supported|available|offered)\b(?! (?:for|on|in|to) (?:your|this|the current) )/,
      /\b(?:api|endpoint|version|method|operation)\b[^.\n]{0,30}\b(?:has been|is|was) (?:deprecated|sunset|retired|discontinued)\b/,
      /\bnot (?:supported|available|implemented|offered) (?:on|in|by|for|with) (?:this|the|your|the current|this current) (?:\w+ ){0,2}(?:deployment|server|version|edition|instance|environment|cluster|platform|backend|engine|driver|provider|runtime|installation|build|release|database|tier of the server)s?\b/,
      /\b(?:this|the|your) (?:\w+ ){0,2}(?:deployment|server|version|edition|instance|environment|cluster|platform|backend|engine|driver|provider|runtime|installation|database) (?:does not|doesn't|do not|don't|cannot|can't) (?:support|offer|provide|allow|handle|perform|do)\b/,
      /\b(?:requires?|needs?|only (?:available|supported) (?:in|on|with|from|since)) (?:\w+ ){0,3}(?:version |v)?\d+(?:\.\d+)*\+?(?: (?:or|and) (?:later|higher|newer|above|greater|up))?\b(?=[^.\n]{0,40}\b(?:server|version|cluster|deployment|instance|database|engine|edition|release)\b)/,
      /\bnot (?:available|supported|possible|exposed) (?:via|through|using|over|with|from) (?:the |this |our )?(?:public |rest |graphql )?(?:api|mcp|tool|endpoint|integration|interface|server)\b/,
      /\bonly (?:available|supported) (?:in|on|for|with) (?:\w+ ){0,2}(?:deployments?|clusters?|instances?|servers?|editions?|versions?|self[- ]hosted|on[- ]prem(?:ise)?s?|cloud)\b/,
    ),
  },
  // The request's own body refused, in words, whatever status carries it (`Error 500: Validation
  // failed: email is invalid`): the same call fails the same way, the model fixes it.
  {
    ...INVALID,
    pattern: oneOf(
      /\bvalidation failed\s*[:;]/,
      /\b(?:invalid|malformed) (?:json )?(?:request )?(?:payload|request body)\b/,
      /\b(?:could not|unable to|failed to|cannot) (?:parse|decode) (?:the )?request(?: body| payload| json)?\b/,
    ),
  },
  // HTTP statuses in text: the number says which class the upstream answer belongs to.
  statusRule(400, "Bad Request"),
  statusRule(401, "Unauthorized"),
  statusRule(402, "Payment Required"),
  statusRule(403, "Forbidden"),
  statusRule(404, "Not Found"),
  statusRule(405, "Method Not Allowed"),
  statusRule(408, "Request Time-?out"),
  statusRule(409, "Conflict"),
  statusRule(410, "Gone"),
  statusRule(412, "Precondition Failed"),
  statusRule(422, "Unprocessable"),
  statusRule(423, "Locked"),
  statusRule(429, "Too Many Requests"),
  statusRule(500, "Internal Server Error"),
  statusRule(501, "Not Implemented"),
  statusRule(502, "Bad Gateway"),
  statusRule(503, "Service Unavailable"),
  statusRule(504, "Gateway Time-?out"),
  { ...INVALID, weak: true, pattern: statusPattern("4\\d\\d") },
  { ...UPSTREAM, weak: true, pattern: statusPattern("5\\d\\d") },
  // A host name that does not resolve is most often a wrong host in the arguments.
  {
    ...NOT_FOUND,
    pattern: oneOf(
      /\bENOTFOUND\b/,
      /\bgetaddrinfo\b(?![^\n]{0,20}EAI[_ ]AGAIN)/,
      /\bname or service not known\b/,
      /\bname not resolved\b/,
      /\bcould not resolve host\b/,
      /\bnodename nor servname\b/,
      /\bno such host\b/,
    ),
  },
  // Contention: a lock, deadlock or write conflict clears when the other party is done.
  {
    ...UNAVAILABLE,
    pattern: oneOf(
      /\bdeadlock/,
      // A store's own lock, named: another writer holds it.
      /\b(?:database|db|table|row|record|file|index|journal)s? (?:is|are|was|were) (?:currently )?locked\b/,
      /\blocked (?:the )?(?:table|row|record)s?\b/,
      /\block (?:has|have) not (?:yet )?been released\b/,
      /\block (?:wait )?timeout\b/,
      /\bunable to (?:create|acquire|obtain)\b[^\n]{0,60}\block\b/,
      /\b(?:resource|server|service|device|database|system|host|backend|instance|worker)s? (?:is |are )?(?:currently |too )?busy\b/,
      /\bwrite conflict\b/,
      /\bconflicted with another\b/,
      /\bcould not serialize\b/,
      /\bconcurrent (?:update|modification|write)s?\b/,
    ),
  },
  // Something is locked, no lock named as held by another party: a state as often as contention
  // (a published version, a sealed store).
  { ...UNAVAILABLE, weak: true, pattern: /\b(?:is|was) locked\b/i },
  // `timeout` named as an argument (`timeout must be between 1 and 300`), or a query that ran out
  // of time because it asks too much, with the way to narrow it: the same call times out again.
  {
    ...INVALID,
    pattern: oneOf(
      /\btime[- ]?out\b['"`]?(?: (?:value|parameter|argument|option|field|setting))?['"`]? (?:must|should|cannot|can ?n[o']t|needs to|has to|may not)\b/,
      /\btime[- ]?out\b['"`]?(?: (?:value|parameter|argument))? (?:is|was) (?:invalid|not valid|not a (?:valid )?(?:number|integer)|too (?:large|long|small|short|high|low)|out of range)\b/,
      /\binvalid (?:\w+ )?time[- ]?out\b/,
      /\btim(?:ed|e)[- ]?out\b[^\n]{0,120}?\b(?:too (?:broad|large|wide|big|complex|much data)|scanned too much|narrow (?:the|your|it|down)|add (?:a |an )?(?:filter|limit|where)|reduce (?:the )?(?:date |time )?(?:range|scope|size|number)|(?:a )?smaller (?:range|query|batch|page|window)|fewer (?:rows|results|items|columns))\b/,
    ),
  },
  // Could not even connect: the request never left.
  {
    ...REFUSED,
    pattern: oneOf(
      /\bECONNREFUSED\b/,
      /\bconnection attempts? (?:failed|unsuccessful)\b/,
      /\bconnection refused\b/,
      /\b(?:could not|couldn't|cannot|can't|unable to|failed to) connect\b/,
      /\bconnect ETIMEDOUT\b/,
      /\btim(?:ed|e)[- ]?out\b[^.\n]{0,30}\b(?:trying to|while|when) connect/,
      /\bconnect(?:ion)? time[- ]?out\b/,
      /\bserver selection timed out\b/,
      /\b(?:EHOSTUNREACH|ENETUNREACH)\b/,
      /\b(?:host|network) (?:is )?unreachable\b/,
    ),
  },
  // The dependency is starting, overloaded or out of slots: waiting clears it.
  {
    ...UNAVAILABLE,
    pattern: oneOf(
      /\b(?:temporarily|currently|service|server|backend|upstream) (?:is )?unavailable\b/,
      /^unavailable\b/,
      // gRPC's status UNAVAILABLE as grpc-js (`14 UNAVAILABLE: …`) and grpc-go (`code = Unavailable`) print it.
      /^\d{1,2} unavailable:/,
      /\bcode = unavailable\b/,
      /\boverloaded\b/,
      /\bover capacity\b/,
      /\b(?:is|are) (?:still )?(?:starting(?: up)?|loading|restarting|warming up|in recovery)\b/,
      /\btoo many (?:clients|connections|open files)\b/,
      /\bconnection slots\b/,
      /\bEAI[_ ]AGAIN\b/,
      /\btemporary failure in name resolution\b/,
      /\btry again (?:later|shortly|soon|in a (?:few|moment|while)|after (?:some ?time|a (?:while|few|moment)))\b/,
      /\btransient (?:\w+ )?(?:error|failure|issue|problem)\b/,
      /\bretry (?:later|shortly|in a (?:few|moment))\b/,
      /\bplease retry\b(?!\s+(?:with|using|once|after|by|when|if))/,
      /\bdetached from (?:the )?document\b/,
      /\bcircuit[- ]?breaker\b[^.\n]{0,20}\b(?:open|opened|tripped)\b/,
      /\b(?:under|undergoing|scheduled|down for|in) maintenance\b|\bmaintenance (?:mode|window|in progress)\b/,
      /\b(?:high|heavy|unusually high|unusual) (?:demand|load|traffic)\b/,
      /\b(?:at|over|insufficient|no available) capacity\b/,
      /\b(?:is|are) (?:still |currently )?being (?:created|provisioned|initiali[sz]ed|deployed|restored|resized|started|rebooted)\b/,
      /\bnot (?:yet )?ready(?: yet)?(?: to (?:serve|accept|receive|handle))?\b(?![^.\n]{0,20}\bfor (?:production|release|review)\b)/,
      /\bno (?:healthy|available|alive) (?:upstreams?|backends?|nodes?|hosts?|servers?|replicas?|instances?|workers?)\b/,
      /\bstale element\b/,
    ),
  },
  // A browser waited for an element the model named (a locator, a selector) until it timed out:
  // most often the element is not there, and the model picks another one.
  {
    ...NOT_FOUND,
    pattern: oneOf(
      /\bwaiting for (?:the )?(?:locator|selector|element|xpath)\b/,
      /\bwaiting for selector\b[^\n]{0,80}\bfailed\b/,
    ),
  },
  // Timeouts: the call may have taken effect, the answer did not arrive.
  {
    ...TIMEOUT,
    pattern: /\bETIMEDOUT\b/i,
  },
  // A timeout in words: the call may have taken effect, and the words also name limits of the
  // work itself.
  {
    ...TIMEOUT,
    weak: true,
    pattern: oneOf(/\btim(?:ed|e)[- ]?out\b/, /\btimeout\b/, /\bdeadline exceeded\b/),
  },
  // The connection dropped mid-call: the call may have taken effect.
  {
    ...CLOSED,
    pattern: oneOf(
      /\bECONNRESET\b/,
      /\bEPIPE\b/,
      /\bsocket hang up\b/,
      /\bbroken pipe\b/,
      /\bconnection\b[^\n]{0,40}\b(?:closed|reset|terminated|termination|dropped|lost|aborted|interrupted)\b/,
      /\b(?:client|socket|stream|channel|transport|session|page|browser|context) (?:is|was|has been) closed\b/,
      /\b(?:server|peer|remote(?: host| end)?) (?:unexpectedly )?(?:closed|disconnected)\b/,
      /\breset before headers\b/,
      /\bpremature(?:ly)? close\b|\bclosed prematurely\b|\bother side closed\b/,
    ),
  },
  { ...c("network_error", "retry_dependency", "unknown"), pattern: /\bupstream connect error\b/i },
  // A network failure in words, not which: it may have come after the request was sent.
  {
    ...c("network_error", "retry_dependency", "unknown"),
    weak: true,
    pattern: oneOf(
      /\bfetch failed\b/,
      /\b(?:read|write|remote protocol) error\b/,
      /\bnetwork (?:error|failure)\b/,
      /\bconnection (?:issue|problem|error)\b/,
    ),
  },
  // A gateway's failure, named: the upstream did not answer in time or at all.
  { ...UPSTREAM, pattern: oneOf(/\bbad gateway\b/, /\bgateway time-?out\b/) },
  // Server-side failures without detail: the dependency broke, the call may have run, and the
  // words wrap failures of every kind.
  {
    ...UPSTREAM,
    weak: true,
    pattern: oneOf(
      /\binternal (?:server )?(?:error|failure)\b/,
      /\bserver error\b/,
      /\bunknown error\b/,
      /\bupstream (?:error|failure)\b/,
    ),
  },
  // Not found: the model named something that does not exist; it can look it up and fix the call.
  {
    ...NOT_FOUND,
    pattern: oneOf(
      /\bnot found\b/,
      /\b(?:does|do) ?n[o']t exist\b/,
      /\bno such\b/,
      /\bdid not match any\b/,
      /\bdid not resolve\b/,
      /\bcould ?n[o']t (?:be )?find\b/,
      /\bcan ?n[o']t (?:be )?find\b/,
      /\bcannot be found\b/,
      /\b(?:could|can) ?n[o']t be (?:found|located)\b/,
      /\b(?:was|were) ?n[o']t found\b/,
      /\bunable to (?:find|locate)\b/,
      /\bno (?:\w+ ){0,3}(?:found|matching|matched)\b/,
      /\bno [\w-]+ (?:with|for|named|called|by) (?:the )?(?:id|name|key|slug|number|title|path)\b/,
      /\bzero results\b/,
      /\bno results\b/,
      /\bunknown (?:revision|parameter|option|argument|field|column|table|key|id|user|channel|ref|branch|model|command|operation|service|resource|database|collection|index|entity|file|path|property|action|mode|format|sort|filter)\b/,
      /\bunrecognized\b/,
      /\bis not defined\b/,
      /\bnot present\b/,
    ),
  },
  // A conflict with another operation still running, which clears when it completes (`conflicts
  // with a pending activation. Please wait for the current activation to complete`).
  {
    ...UNAVAILABLE,
    pattern: oneOf(
      /\bconflicts? with (?:an? |the |another )?(?:pending|running|ongoing|in[- ]progress|current|active|concurrent) (?:[\w-]+ ){0,2}(?:activation|deployment|operation|job|build|update|migration|import|export|sync|task|process|request|upgrade|restore|backup)s?\b/,
      /\bwait (?:for|until) (?:the |a |any )?(?:current |pending |running |ongoing |previous |in[- ]progress )?(?:[\w-]+ )?(?:activation|deployment|operation|job|build|update|migration|import|export|sync|task|process|upgrade|restore|backup)s? (?:to (?:complete|finish|end)|completes|finishes|is (?:complete|done|finished))\b/,
    ),
  },
  // Conflicts with existing state: choose another value or re-read and resend.
  {
    ...CONFLICT,
    pattern: oneOf(
      /\balready (?:exists|in use|taken|registered|present)\b/,
      /\bduplicate\b/,
      /\bunique constraint\b/,
      /\bviolates [^.\n]{0,30}\bconstraint\b/,
      // What conflicts, named: `the branch has conflicts`, `name conflicts with an existing route`.
      /\bconflicts\b/,
      /\bconflict with\b/,
      /\bdoes not match\b/,
      /\bE11000\b/,
      /\bout of date\b/,
      /\bmodified since\b/,
    ),
  },
  // The bare word of a conflict, as a 409's or a 412's reason phrase or an error code says it
  // (`409 Conflict`, `"code": "conflict"`, `Precondition Failed`): the class, not what conflicts
  // (TextRule.weak).
  { ...CONFLICT, weak: true, pattern: oneOf(/\bconflict\b/, /\bprecondition failed\b/) },
  // A value the tool does not accept (format, protocol, type): the model picks another value.
  {
    ...INVALID,
    pattern: oneOf(
      /\b(?:unsupported|invalid) (?:\w+ )?(?:format|type|value|encoding|language|protocol|scheme|url|extension|character|locale|region|time ?zone|currency|country|parameter|option|argument|field|model|version)s?\b/,
      /\b(?:format|type|value|encoding|language|protocol|scheme|extension|locale|region|time ?zone|currency|country|parameter|option|argument|field|property|key|attribute|model|version|character)s? (?:['"`][^'"`\n]{0,60}['"`] )?(?:is |are )?not (?:supported|allowed)\b/,
      /['"`][^'"`\n]{1,60}['"`] (?:is |are )?not supported\b/,
      /\bonly (?:\w+ ){0,3}characters? (?:are |is )?allowed\b/,
    ),
  },
  // A bare "invalid" or "malformed": a generic word, as a bare status is (TextRule.weak).
  { ...INVALID, weak: true, pattern: oneOf(/\binvalid\b/, /\bmalformed\b/) },
  // Other malformed or missing arguments.
  {
    ...INVALID,
    pattern: oneOf(
      /\b(?:path|value|type|id|name|parameter|argument|format)s? mismatch\b/,
      /(?<!(?:token|signature|jwt|certificate) )\bvalidation (?:error|failed|exception)\b/,
      /\bfailed to satisfy\b/,
      /\bmissing\b/,
      /\b(?:is|are|be) empty\b/,
      /\brequired\b/,
      /\bmust (?:be|not|contain|start|match|have|specify|include)\b/,
      /\bexpected\b/,
      /\bsyntax error\b/,
      /\bcannot (?:be )?(?:specify|specified|combined?|contain|start|end|be empty|exceed)\b/,
      /\bnot a valid\b/,
      /\bout of range\b/,
      /\btoo (?:long|large|short|small|big)\b/,
      /\bexceeds?\b/,
      /\bwrong (?:type|kind|format|number)\b/,
      /\bdivision by zero\b/,
      /\b(?:parse|parsing) error\b/,
      /\b(?:could not|failed to|unable to) parse\b/,
    ),
  },
  // An operation this tool or deployment cannot do at all: another tool may.
  {
    ...NOT_SUPPORTED,
    pattern: oneOf(
      /\bnot (?:yet )?(?:implemented|supported)\b/,
      /\bunsupported (?:operation|method|action|feature|command|request)\b/,
      /\bdoes ?n[o']t support\b/,
      /\bnot available (?:in|on|through|via|for) (?:this|the) (?:deployment|server|version|instance|environment)\b/,
    ),
  },
  // Refusals by a rule of the domain or the operator: retrying or rephrasing will not help.
  {
    ...BUSINESS_RULE,
    pattern: oneOf(
      /\bnot (?:allowed|permitted)\b/,
      /\bdisallow(?:ed|s)\b/,
      /\bcannot\b[^.\n]{0,80}\bbecause\b/,
      /\b(?:refused|rejected|denied|blocked) (?:by|due to)\b/,
    ),
  },
  // gRPC's canonical codes as grpc-go (`code = Unimplemented`) and grpc-js (`12 UNIMPLEMENTED:`)
  // print them, where the description says nothing any rule above reads: the code is the class.
  {
    ...NOT_SUPPORTED,
    pattern: oneOf(/\bcode = unimplemented\b/, /^\d{1,2} unimplemented:/),
  },
  {
    ...INVALID,
    pattern: oneOf(/\bcode = out ?of ?range\b/, /^\d{1,2} out_of_range:/),
  },
  {
    ...UPSTREAM,
    pattern: oneOf(
      /\bcode = (?:internal|unknown|data ?loss)\b/,
      /^\d{1,2} (?:internal|unknown|data_loss):/,
    ),
  },
];

/**
 * Splits identifiers into words: `channel_not_found`, `AccessDeniedException`, `readOnly`.
 * @internal Exported for tests; not part of the public API.
 */
export function splitIdentifiers(text: string): string {
  // One pass, equal to three replaces (prefilter.test.ts checks it against them): each `_` becomes
  // a space (`/_/g`), and a space goes before a capital after a lowercase letter or a digit
  // (`/([a-z0-9])([A-Z])/g`) or after a capital and before a lowercase letter
  // (`/([A-Z]+)([A-Z][a-z])/g`). The text itself when nothing changes.
  let out = "";
  let copied = 0;
  for (let at = 0; at < text.length; at++) {
    const code = text.charCodeAt(at);
    if (code === 95) {
      out += `${text.slice(copied, at)} `;
      copied = at + 1;
      continue;
    }
    if (code < 65 || code > 90 || at === 0) continue;
    const before = text.charCodeAt(at - 1);
    if (
      isLowercase(before) ||
      isDigit(before) ||
      (before >= 65 && before <= 90 && isLowercase(text.charCodeAt(at + 1)))
    ) {
      out += `${text.slice(copied, at)} `;
      copied = at;
    }
  }
  return copied === 0 ? text : out + text.slice(copied);
}

function isLowercase(code: number): boolean {
  return code >= 97 && code <= 122;
}

/** Made on the first match, not when the module loads. */
let prefilter: Prefilter<TextRule> | undefined;

/**
 * Whether a status pattern may match the text or its identifier-split copy: every match of one
 * holds a number of three digits, 4xx or 5xx, not followed by a digit, and right before it one of
 * - nothing (the start), or a character that is not a word character (`[\s:=#'"(\[]`, the
 *   boundary of `\b4\d\d`), or `_` (the split makes it a space);
 * - the last letter of a lead: `status`, `code`, `https`, `http`, `error`, `with` (any case);
 * - the digit of `http/1` or `http/1.1`: then `/` is one or three characters before the digit.
 * The split turns `_` into a space and puts spaces before capitals only, never before a digit, so
 * what stands right before and after the number is the same in both copies, `_` apart.
 * One pass over the text; most numbers of ids (inside hex, after a letter) are ruled out.
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldStatus(text: string): boolean {
  const n = text.length - 2;
  for (let at = 0; at < n; at++) {
    const first = text.charCodeAt(at);
    if (first !== 52 && first !== 53) continue; // "4", "5"
    if (!isDigit(text.charCodeAt(at + 1)) || !isDigit(text.charCodeAt(at + 2))) continue;
    if (at + 3 < text.length && isDigit(text.charCodeAt(at + 3))) continue;
    if (at === 0) return true;
    const before = text.charCodeAt(at - 1);
    if (isDigit(before)) {
      // `http/1` + number, or `http/1.1` + number.
      const slash = text.charCodeAt(at - 2);
      if (slash === 47 || (slash === 46 && at >= 4 && text.charCodeAt(at - 4) === 47)) return true;
      continue;
    }
    const lower = before | 32;
    if (!(lower >= 97 && lower <= 122)) return true; // not a letter: `_`, a separator, a boundary
    // s(tatus, https), e (code), r (error), h (with), p (http)
    if (lower === 115 || lower === 101 || lower === 114 || lower === 104 || lower === 112) {
      return true;
    }
  }
  return false;
}

function isDigit(code: number): boolean {
  return code >= 48 && code <= 57;
}

/** The first rule whose pattern matches the text (as written, or with identifiers split), or `undefined`. */
export function matchBuiltinRules(text: string): TextRule | undefined {
  return matchBuiltinAlternative(text)?.rule;
}

/**
 * Which phrasing of which rule matched: the rule's position in {@link BUILTIN_RULES} and the
 * alternative of its pattern, for `governor classify --explain`.
 */
export function explainBuiltinMatch(
  text: string,
): { readonly index: number; readonly rule: TextRule; readonly phrasing: string } | undefined {
  const hit = matchBuiltinAlternative(text);
  if (hit === undefined) return undefined;
  return { index: BUILTIN_RULES.indexOf(hit.rule), rule: hit.rule, phrasing: hit.pattern.source };
}

function matchBuiltinAlternative(text: string): Alternative<TextRule> | undefined {
  const head = ruleHead(text);
  return scanRules(head);
}

function scanRules(head: string): Alternative<TextRule> | undefined {
  prefilter ??= buildPrefilter(BUILTIN_RULES, (p) => STATUS_PATTERNS.has(p));
  const { alternatives, candidates, seen } = prefilter;
  const mark = scan(prefilter, head.toLowerCase());
  let status: boolean | undefined;
  let split: string | undefined;
  let weak: Alternative<TextRule> | undefined;
  // Candidates in the order of the rules: the first one that matches names the first rule.
  for (let w = 0; w < candidates.length; w++) {
    let bits = candidates[w] as number;
    while (bits !== 0) {
      const low = bits & -bits;
      bits ^= low;
      const alternative = alternatives[w * 32 + 31 - Math.clz32(low)] as Alternative<TextRule>;
      if (alternative.status) {
        status ??= mayHoldStatus(head);
        if (!status) continue;
      }
      if (alternative.rule.weak === true && weak !== undefined) continue;
      if (!holds(seen, alternative.conditions, mark)) continue;
      const { pattern } = alternative;
      let hit = pattern.test(head);
      if (!hit && alternative.rule.raw !== true) {
        split ??= splitIdentifiers(head);
        hit = split !== head && pattern.test(split);
      }
      if (!hit) continue;
      if (alternative.rule.weak !== true) return alternative;
      // A generic word (TextRule.weak) yields to any specific phrasing the text also holds:
      // `unknown error: … exceeds the maximum allowed` is about the value, not the server.
      weak = alternative;
    }
  }
  return weak;
}

// ---------------------------------------------------------------------------------------------
// "In progress" answers (issue 26, docs/idempotency.md "A write in doubt"), apart from the table
// above: classify.ts checks them before structured signals, since a `409` or a JSON-RPC error
// that says a request with this key is still being processed is not a conflict the model fixes.
// The first attempt may still complete: the outcome is `unknown`, and only a retry with the same
// key (a tool that honours keys) may follow; otherwise the write stops as `uncertain_mutation`.
// ---------------------------------------------------------------------------------------------

/** What an "in progress" answer is read as: wait and retry with the same key, or stop. */
export const IN_PROGRESS = {
  action: "retry_dependency",
  reason: "unavailable",
  certainty: "unknown",
} as const satisfies Classification;

/** Phrasings of "a request with this key is still being processed", from servers that honour keys. */
const IN_PROGRESS_TEXT = oneOf(
  // Stripe: `idempotency_key_in_use`, "another in-progress request using this Idempotency-Key".
  /\bidempotency[_ -]?key[_ -]in[_ -]use\b/,
  /\banother in[- ]progress request\b/,
  /\bidempotency[_ -]?key\b[^\n]{0,120}?\b(?:still being processed|is being processed|in progress|currently (?:being )?process(?:ed|ing))\b/,
  /\b(?:request|operation|call)s? with (?:this|the same|that) (?:idempotency )?key\b[^\n]{0,80}?\b(?:still being processed|in progress|not (?:yet )?(?:finished|complete))\b/,
  /\bstill being processed\b/,
);

/** Whether a failure text says a request with this key is still in progress. */
export function isInProgressText(text: string): boolean {
  const head = ruleHead(text);
  return IN_PROGRESS_TEXT.test(head);
}

/**
 * A text in which the server says the failure is not to be retried: `"retryable": false` in a
 * JSON body, `non-retryable`, `do not retry`, `retrying will not help`. Like the draft metadata's
 * `retryable: false`, it can only make a retry read from the text more conservative (classify.ts).
 */
const NOT_RETRYABLE_TEXT = oneOf(
  /["'`]?(?:is_?)?retr(?:y|i)able["'`]?\s*[:=]\s*["'`]?false\b/,
  /\bnon[- ]?retr(?:y|i)able\b/,
  /\bnot retr(?:y|i)able\b/,
  /\b(?:do not|don't|should not|must not|will not) (?:be )?retr(?:y|ied)\b/,
  /\bretrying (?:will not|won't|does not|doesn't|cannot|can't) help\b/,
);

/** Whether a failure text says it is not to be retried. */
export function isNotRetryableText(text: string): boolean {
  const head = ruleHead(text);
  return NOT_RETRYABLE_TEXT.test(head);
}
