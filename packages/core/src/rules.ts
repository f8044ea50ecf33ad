/**
 * The built-in text rule table of the classifier (DESIGN.md §3, step 3), tuned and tested on
 * `test/corpus/`. Every pattern is a general phrasing of a failure class, never a string of one
 * server: the same kinds of texts from other servers must land in the same place.
 *
 * Each pattern is tested twice: on the text as written, and on a copy with identifiers split into
 * words (`channel_not_found` -> `channel not found`, `AccessDeniedException` ->
 * `Access Denied Exception`), so error codes and prose share one phrasing. When no rule matches,
 * the caller applies the default (`correct_arguments`, reason `unclassified`).
 */
import type { Action, Certainty, Reason } from "./types.ts";

/** One row of the table: a phrasing and the classification it stands for. */
export interface TextRule {
  /** A reason from `REASONS` (types.ts). */
  readonly reason: Reason;
  /** Normally `REASONS[reason]`, spelled out so the table reads on its own. */
  readonly action: Exclude<Action, "host">;
  /** Per failure class (DESIGN.md §2). */
  readonly certainty: Certainty;
  /** No `g`/`y` flags: they make `test` stateful. */
  readonly pattern: RegExp;
}

/** How much text the rules look at: error texts put their cause first. */
const MAX_TEXT = 4000;

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
  const bracketed = String.raw`[(\[]${code}(?!\d)`;
  const withPhrase = phrase ? String.raw`|\b${code}\s+${phrase}` : "";
  return new RegExp(`${announced}|${bracketed}${withPhrase}`, "i");
}

function statusRule(code: number, phrase?: string): TextRule {
  const known = classifyHttpStatus(code);
  if (!known) throw new Error(`not an HTTP error status: ${code}`);
  return { ...known, pattern: statusPattern(String(code), phrase) };
}

/** One case-insensitive pattern from alternatives, so each phrasing of a family reads on its own line. */
function oneOf(...alternatives: RegExp[]): RegExp {
  return new RegExp(alternatives.map((a) => `(?:${a.source})`).join("|"), "i");
}

/** Ordered; first match wins. */
export const BUILTIN_RULES: readonly TextRule[] = [
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
      /\bcredit balance\b/,
      /\bbalance is too low\b/,
      /\bpayment (?:required|method|setup|details|failed)\b/,
      /\b(?:enable|set up|setup|add|update) (?:a |your )?billing\b/,
      /\bbilling (?:is )?(?:not enabled|disabled|required|account|details)\b/,
      /\bupgrade (?:your |the )?(?:plan|account|subscription|tier)\b/,
      /\b(?:plan|subscription|tier) required\b/,
      /\b(?:paid|pro|team|enterprise|premium|higher) (?:plan|tier|subscription)s?\b/,
      /\bnot subscribed\b/,
      /\bopt[- ]?in required\b/,
      /\b(?:free|trial|anonymous) (?:[\w-]+ ){0,3}(?:rate )?limit\b/,
      /\b(?:for higher|without|increase your|raise your) (?:rate |usage )?limits\b/,
      /\b(?:daily|monthly|yearly|annual) (?:\w+ )?(?:limit|quota|allowance)\b/,
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
      /\b(?:access|auth|authentication|bearer|security|oauth|refresh|session|api|personal access) token\b[^.\n]{0,60}\b(?:invalid|expired|revoked|missing|required|not valid)\b/,
      /\b(?:invalid|expired|revoked|missing|rejected)(?: (?:access|auth|authentication|bearer|security|oauth|refresh|api))? token\b/,
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
      /\b(?:don't|doesn't|lacks?) (?:the )?(?:required |necessary |sufficient |enough )?(?:permissions?|privileges?|access rights)\b/,
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
  // The server's own setup is wrong: an operator must change configuration and restart it.
  {
    ...MISCONFIGURED,
    pattern: oneOf(
      /\bmisconfigur/,
      /\bnot (?:properly )?configured\b/,
      /\bconfiguration (?:error|issue|problem)\b/,
      /\benvironment variable\b/,
      /\brestart the server\b/,
      /\bserver (?:cannot|can't|is unable to) (?:operate|start|run)\b/,
      /\b(?:was )?started without\b/,
      /\bupdate (?:the|your) (?:server )?configuration\b/,
      /\breconnect (?:the|your|without|with)\b/,
      /\bstart a new session\b/,
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
  { ...INVALID, pattern: statusPattern("4\\d\\d") },
  { ...UPSTREAM, pattern: statusPattern("5\\d\\d") },
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
      /\b(?:is|was) locked\b/,
      /\block (?:wait )?timeout\b/,
      /\bunable to (?:create|acquire|obtain)\b[^\n]{0,60}\block\b/,
      /\b(?:resource|server|service|device|database|system|host|backend|instance|worker)s? (?:is |are )?(?:currently |too )?busy\b/,
      /\bwrite conflict\b/,
      /\bconflicted with another\b/,
      /\bcould not serialize\b/,
      /\bconcurrent (?:update|modification|write)s?\b/,
    ),
  },
  // Could not even connect: the request never left.
  {
    ...REFUSED,
    pattern: oneOf(
      /\bECONNREFUSED\b/,
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
      /\boverloaded\b/,
      /\bover capacity\b/,
      /\b(?:is|are) (?:still )?(?:starting(?: up)?|loading|restarting|warming up|in recovery)\b/,
      /\btoo many (?:clients|connections|open files)\b/,
      /\bconnection slots\b/,
      /\bEAI[_ ]AGAIN\b/,
      /\btemporary failure in name resolution\b/,
      /\btry again later\b/,
      /\bretry (?:later|shortly|in a (?:few|moment))\b/,
      /\bplease retry\b(?!\s+(?:with|using|once|after|by|when|if))/,
      /\bdetached from (?:the )?document\b/,
      /\bstale element\b/,
    ),
  },
  // Timeouts: the call may have taken effect, the answer did not arrive.
  {
    ...TIMEOUT,
    pattern: oneOf(
      /\btim(?:ed|e)[- ]?out\b/,
      /\btimeout\b/,
      /\bdeadline exceeded\b/,
      /\bETIMEDOUT\b/,
    ),
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
    ),
  },
  {
    ...c("network_error", "retry_dependency", "unknown"),
    pattern: oneOf(
      /\bfetch failed\b/,
      /\b(?:read|write|remote protocol) error\b/,
      /\bnetwork (?:error|failure)\b/,
      /\bconnection (?:issue|problem|error)\b/,
      /\bupstream connect error\b/,
    ),
  },
  // Server-side failures without detail: the dependency broke, the call may have run.
  {
    ...UPSTREAM,
    pattern: oneOf(
      /\binternal (?:server )?(?:error|failure)\b/,
      /\bserver error\b/,
      /\bbad gateway\b/,
      /\bgateway time-?out\b/,
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
      /\bunable to (?:find|locate)\b/,
      /\bno (?:\w+ ){0,3}(?:found|matching|matched)\b/,
      /\bno [\w-]+ (?:with|for|named|called|by) (?:the )?(?:id|name|key|slug|number|title|path)\b/,
      /\bzero results\b/,
      /\bno results\b/,
      /\bunknown (?:revision|parameter|option|argument|field|column|table|key|id|user|channel|ref|branch|model|command|operation|service|resource|database|collection|index|entity|file|path|property)\b/,
      /\bunrecognized\b/,
      /\bis not defined\b/,
      /\bnot present\b/,
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
      /\bconflicts?\b/,
      /\bdoes not match\b/,
      /\bE11000\b/,
      /\bout of date\b/,
      /\bmodified since\b/,
      /\bprecondition failed\b/,
    ),
  },
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
  // Other malformed or missing arguments.
  {
    ...INVALID,
    pattern: oneOf(
      /\binvalid\b/,
      /\bmalformed\b/,
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
];

/** Splits identifiers into words: `channel_not_found`, `AccessDeniedException`, `readOnly`. */
function splitIdentifiers(text: string): string {
  return text
    .replace(/_/g, " ")
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2");
}

// ---------------------------------------------------------------------------------------------
// Prefilter: most rules cannot match most texts, and proving it is cheaper than running them.
//
// Each alternative of a pattern is read for literal words its every match contains: a match of
// `\bno such tool\b` holds `such` and `tool`, one of `\b(?:quota|limit)\b…per (?:second|minute)`
// holds `quota` or `limit`, and `per`, and `second` or `minute`. One pass over the lowercased text
// finds which of these words it holds; only alternatives whose every condition holds are run,
// each compiled alone (a pattern matches where one of its alternatives does). The words hold no
// space and no `_`, so a word in the identifier-split copy is in the text as written too; they are
// ASCII, and a case-insensitive pattern without the `u` flag matches an ASCII letter only with its
// ASCII case variants, so the lowercased text holds every word a match holds. What this reading
// does not understand gets no conditions and always runs. The tables are made on the first match.

/** A literal character that may be part of a word: printable ASCII, no space, no `_`. */
function isWordChar(ch: string): boolean {
  const code = ch.charCodeAt(0);
  return code > 32 && code < 127 && ch !== "_";
}

/** Words one of which a match holds. Usable when every word has two characters or more. */
type AnyOf = readonly string[];

function usable(words: AnyOf): boolean {
  return words.length > 0 && words.every((w) => w.length >= 2);
}

/** Orders conditions likeliest to fail first: longest shortest word, then fewest words. */
function byStrength(a: AnyOf, b: AnyOf): number {
  const shortest = (words: AnyOf) => Math.min(...words.map((w) => w.length));
  return shortest(b) - shortest(a) || a.length - b.length;
}

/** Of several conditions, the one likeliest to fail. */
function strongest(conditions: readonly AnyOf[]): AnyOf | undefined {
  return [...conditions].sort(byStrength)[0];
}

class UnsupportedPattern extends Error {}

/**
 * Reads a regex source for the literal words its matches must hold. Conservative: a construct it
 * does not fully understand throws {@link UnsupportedPattern}.
 */
class LiteralReader {
  pos = 0;
  constructor(readonly src: string) {}

  /** The top-level alternatives: each one's source and the conditions all its matches meet. */
  alternatives(): { source: string; conditions: AnyOf[] }[] {
    const out: { source: string; conditions: AnyOf[] }[] = [];
    for (;;) {
      const start = this.pos;
      const conditions = this.sequence();
      out.push({ source: this.src.slice(start, this.pos), conditions });
      if (this.pos >= this.src.length) return out;
      if (this.src[this.pos] !== "|") throw new UnsupportedPattern(this.src);
      this.pos++;
    }
  }

  /** A group's alternatives, up to its `)`: all conditions of a single one, else one union. */
  private disjunction(): AnyOf[] {
    const branches: AnyOf[][] = [];
    for (;;) {
      branches.push(this.sequence());
      if (this.src[this.pos] !== "|") break;
      this.pos++;
    }
    if (branches.length === 1) return branches[0] as AnyOf[];
    const union: string[] = [];
    for (const conditions of branches) {
      const best = strongest(conditions);
      if (best === undefined) return [];
      union.push(...best);
    }
    return [[...new Set(union)]];
  }

  /** A sequence of terms up to `|`, `)` or the end: the conditions every match of it meets. */
  private sequence(): AnyOf[] {
    const conditions: AnyOf[] = [];
    let run = "";
    const flush = () => {
      if (run.length >= 2) conditions.push([run]);
      run = "";
    };
    const src = this.src;
    while (this.pos < src.length && src[this.pos] !== "|" && src[this.pos] !== ")") {
      const atom = this.atom();
      const min = this.quantifier();
      if (typeof atom === "string" && isWordChar(atom)) {
        if (min === 0) {
          flush();
          continue;
        }
        run += atom.toLowerCase();
        // Repeated: the characters after it may be more of it.
        if (min !== 1) flush();
        continue;
      }
      flush();
      if (typeof atom !== "string" && min > 0) conditions.push(...atom.filter(usable));
    }
    flush();
    return conditions;
  }

  /**
   * The minimum count of the quantifier after an atom: 1 when there is none (exactly once), 2
   * standing for "at least once, maybe more".
   */
  private quantifier(): number {
    const src = this.src;
    const ch = src[this.pos];
    let min: number;
    if (ch === "?" || ch === "*") {
      min = 0;
      this.pos++;
    } else if (ch === "+") {
      min = 2;
      this.pos++;
    } else if (ch === "{") {
      const m = /^\{(\d+)(?:(,)(\d*))?\}/.exec(src.slice(this.pos, this.pos + 24));
      if (m === null) throw new UnsupportedPattern(src);
      const low = Number(m[1]);
      const exactlyOnce = low === 1 && (m[2] === undefined || m[3] === "1");
      min = low === 0 ? 0 : exactlyOnce ? 1 : 2;
      this.pos += m[0].length;
    } else {
      return 1;
    }
    if (src[this.pos] === "?") this.pos++;
    return min;
  }

  /** A literal character, or the conditions of a group (none for anything else). */
  private atom(): string | AnyOf[] {
    const src = this.src;
    const ch = src[this.pos] as string;
    this.pos++;
    if (ch === "\\") {
      const e = src[this.pos];
      this.pos++;
      if (e === undefined) throw new UnsupportedPattern(src);
      if ("bBsSwWdDntrfv".includes(e)) return [];
      if ("\\^$.*+?()[]{}|/-'\"`:=#&!,<>@%~;".includes(e)) return e;
      throw new UnsupportedPattern(src);
    }
    if (ch === "[") {
      while (this.pos < src.length && src[this.pos] !== "]") {
        if (src[this.pos] === "\\") this.pos++;
        this.pos++;
      }
      if (src[this.pos] !== "]") throw new UnsupportedPattern(src);
      this.pos++;
      return [];
    }
    if (ch === "(") {
      let lookaround = false;
      if (src.startsWith("?:", this.pos)) this.pos += 2;
      else if (src.startsWith("?=", this.pos) || src.startsWith("?!", this.pos)) {
        lookaround = true;
        this.pos += 2;
      } else if (src.startsWith("?<=", this.pos) || src.startsWith("?<!", this.pos)) {
        lookaround = true;
        this.pos += 3;
      } else if (src[this.pos] === "?") throw new UnsupportedPattern(src);
      const conditions = this.disjunction();
      if (src[this.pos] !== ")") throw new UnsupportedPattern(src);
      this.pos++;
      return lookaround ? [] : conditions;
    }
    if (ch === "." || ch === "^" || ch === "$") return [];
    if ("*+?{}])|".includes(ch)) throw new UnsupportedPattern(src);
    return ch;
  }
}

/**
 * A pattern's top-level alternatives, each with the words its matches must hold (one of each
 * list), or `undefined` when the pattern cannot be read that way (then it runs whole, always).
 * @internal Exported for tests; not part of the public API.
 */
export function patternAlternatives(
  pattern: RegExp,
): { pattern: RegExp; conditions: readonly (readonly string[])[] }[] | undefined {
  const flags = pattern.flags;
  if (/[guvy]/.test(flags)) return undefined;
  try {
    return new LiteralReader(pattern.source)
      .alternatives()
      .map(({ source, conditions }) => ({ pattern: new RegExp(source, flags), conditions }));
  } catch (error) {
    if (error instanceof UnsupportedPattern) return undefined;
    throw error;
  }
}

/** One alternative of a rule's pattern, ready to run. */
interface Alternative {
  readonly rule: TextRule;
  readonly pattern: RegExp;
  /** Runs only on a text with a number that may be an HTTP error status. */
  readonly status: boolean;
  /**
   * Each entry: ids of words, one of which the text must hold. The first is the likeliest to fail:
   * it indexes the alternative.
   */
  readonly conditions: readonly (readonly number[])[];
}

/**
 * The prefilter of the rule table. Words are read in the lowercased text by an Aho-Corasick
 * automaton: one table lookup per character finds every word it holds, overlapping ones too.
 */
interface Prefilter {
  /** Every alternative of every rule, in the order of the rules. */
  readonly alternatives: readonly Alternative[];
  /** Character classes of the automaton, by ASCII code; 0 for a character no word holds. */
  readonly charClass: Uint8Array;
  readonly classes: number;
  /** `next[state * classes + class]`: the state after a character; state 0 is the start. */
  readonly next: Uint16Array;
  /** The words that end at each state (its own, and those of its suffixes). */
  readonly ending: readonly (readonly number[] | undefined)[];
  /** By word id, the alternatives whose first condition names the word. */
  readonly indexedBy: readonly (readonly number[])[];
  /** One bit per alternative: those without conditions. */
  readonly unconditional: Int32Array;
  /** One bit per alternative: the candidates of the text being matched. */
  readonly candidates: Int32Array;
  /** `seen[id] === generation`: the text being matched holds word `id`. */
  readonly seen: Int32Array;
}

/** Made on the first match, not when the module loads. */
let prefilter: Prefilter | undefined;
let generation = 0;

function buildPrefilter(): Prefilter {
  const words: string[] = [];
  const ids = new Map<string, number>();
  const wordId = (word: string): number => {
    let id = ids.get(word);
    if (id === undefined) {
      id = words.push(word) - 1;
      ids.set(word, id);
    }
    return id;
  };
  const alternatives: Alternative[] = [];
  for (const rule of BUILTIN_RULES) {
    const status = STATUS_PATTERNS.has(rule.pattern);
    const read = patternAlternatives(rule.pattern) ?? [{ pattern: rule.pattern, conditions: [] }];
    for (const { pattern, conditions } of read) {
      alternatives.push({
        rule,
        pattern,
        status,
        conditions: [...conditions].sort(byStrength).map((anyOf) => anyOf.map(wordId)),
      });
    }
  }

  const unconditional = new Int32Array(Math.ceil(alternatives.length / 32));
  const indexedBy: number[][] = words.map(() => []);
  for (const [i, alternative] of alternatives.entries()) {
    const first = alternative.conditions[0];
    if (first === undefined) {
      unconditional[i >> 5] = (unconditional[i >> 5] as number) | (1 << (i & 31));
    } else {
      for (const id of first) (indexedBy[id] as number[]).push(i);
    }
  }

  const charClass = new Uint8Array(128);
  let classes = 1;
  for (const word of words) {
    for (let i = 0; i < word.length; i++) {
      const code = word.charCodeAt(i);
      if (charClass[code] === 0) charClass[code] = classes++;
    }
  }
  // The trie of the words, written in the table (0: no edge; no edge leads to the start), then
  // the fallbacks, breadth first: a state's fallback is shallower, so its row is complete when
  // the state's row is filled.
  let states = 1;
  for (const word of words) states += word.length;
  const table = new Uint16Array(states * classes);
  const ending: number[][] = [[]];
  states = 1;
  for (const [id, word] of words.entries()) {
    let state = 0;
    for (let i = 0; i < word.length; i++) {
      const at = state * classes + (charClass[word.charCodeAt(i)] as number);
      if (table[at] === 0) {
        table[at] = states++;
        ending.push([]);
      }
      state = table[at] as number;
    }
    (ending[state] as number[]).push(id);
  }
  if (states > 0xffff) throw new Error("rules: too many words for the prefilter");
  const fallback = new Uint16Array(states);
  const queue: number[] = [0];
  for (let q = 0; q < queue.length; q++) {
    const state = queue[q] as number;
    const back = fallback[state] as number;
    if (state !== 0) (ending[state] as number[]).push(...(ending[back] as number[]));
    for (let cls = 1; cls < classes; cls++) {
      const at = state * classes + cls;
      const child = table[at] as number;
      const viaBack = state === 0 ? 0 : (table[back * classes + cls] as number);
      if (child === 0) {
        table[at] = viaBack;
      } else {
        fallback[child] = viaBack;
        queue.push(child);
      }
    }
  }
  const next = table.slice(0, states * classes);

  return {
    alternatives,
    charClass,
    classes,
    next,
    ending: ending.map((list) => (list.length > 0 ? list : undefined)),
    indexedBy,
    unconditional,
    candidates: new Int32Array(unconditional.length),
    seen: new Int32Array(words.length),
  };
}

/**
 * Reads the lowercased text: marks in `seen` the words it holds and in `candidates` the
 * alternatives worth running. Returns the generation of the marks.
 */
function scan(p: Prefilter, lower: string): number {
  const { next, ending, charClass, classes, indexedBy, candidates, seen } = p;
  if (++generation === 0x7fffffff) {
    seen.fill(0);
    generation = 1;
  }
  const mark = generation;
  candidates.set(p.unconditional);
  let state = 0;
  for (let i = 0; i < lower.length; i++) {
    const code = lower.charCodeAt(i);
    state = next[state * classes + (code < 128 ? (charClass[code] as number) : 0)] as number;
    const ids = ending[state];
    if (ids === undefined) continue;
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k] as number;
      if (seen[id] === mark) continue;
      seen[id] = mark;
      const indexed = indexedBy[id] as readonly number[];
      for (let j = 0; j < indexed.length; j++) {
        const alt = indexed[j] as number;
        candidates[alt >> 5] = (candidates[alt >> 5] as number) | (1 << (alt & 31));
      }
    }
  }
  return mark;
}

/** Whether the text holds a word of each condition but the first (which made it a candidate). */
function holds(
  seen: Int32Array,
  conditions: readonly (readonly number[])[],
  mark: number,
): boolean {
  for (let c = 1; c < conditions.length; c++) {
    const ids = conditions[c] as readonly number[];
    let any = false;
    for (let i = 0; i < ids.length; i++) {
      if (seen[ids[i] as number] === mark) {
        any = true;
        break;
      }
    }
    if (!any) return false;
  }
  return true;
}

/**
 * What every match of a status pattern holds: three digits, 4xx or 5xx (the identifier split
 * never puts a space between digits).
 */
const STATUS_NUMBER = /[45]\d\d/;

/** Whether a text may need {@link splitIdentifiers}: it splits only at `_` and capitals. */
const SPLITTABLE = /[_A-Z]/;

/** The first rule whose pattern matches the text (as written, or with identifiers split), or `undefined`. */
export function matchBuiltinRules(text: string): TextRule | undefined {
  const head = text.length > MAX_TEXT ? text.slice(0, MAX_TEXT) : text;
  prefilter ??= buildPrefilter();
  const { alternatives, candidates, seen } = prefilter;
  const mark = scan(prefilter, head.toLowerCase());
  let status: boolean | undefined;
  let split: string | undefined;
  // Candidates in the order of the rules: the first one that matches names the first rule.
  for (let w = 0; w < candidates.length; w++) {
    let bits = candidates[w] as number;
    while (bits !== 0) {
      const low = bits & -bits;
      bits ^= low;
      const alternative = alternatives[w * 32 + 31 - Math.clz32(low)] as Alternative;
      if (alternative.status) {
        status ??= STATUS_NUMBER.test(head);
        if (!status) continue;
      }
      if (!holds(seen, alternative.conditions, mark)) continue;
      const { pattern } = alternative;
      if (pattern.test(head)) return alternative.rule;
      split ??= SPLITTABLE.test(head) ? splitIdentifiers(head) : head;
      if (split !== head && pattern.test(split)) return alternative.rule;
    }
  }
  return undefined;
}
