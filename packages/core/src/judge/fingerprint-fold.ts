/**
 * The last step before a normalized text is hashed (issue 27.5): what still varies between two
 * occurrences of one template once `normalizeText` has replaced the values it can tell by their
 * shape. Every value placeholder counts as one (a name may be a word in one occurrence, a path or
 * a number in the next), a unit after a value is part of it (`<v> seconds`), a list of values
 * reads as one, and bare words are values where the text announces one: after a noun that names
 * a thing and a colon (`tool: cecil`, `candidate bindings: orders, invoices`), in a list of
 * choices (`not in a, b`, `must be one of: x, y`), after a network error code or Go's DNS
 * `lookup` (`ECONNREFUSED elasticsearch`, `lookup postgres on …`), in `calling the X operation`, between the noun of its kind and a phrase of
 * absence (`texture oak_floor not found`), after `invalid`/`unknown` and the noun of its kind
 * (`invalid currency xyz`), after `found for`/`denied to` (`no results found for x`) and in an
 * error's verb (`failed to fetch x:`), after `got`/`near` (`syntax error near limt`), in a list
 * after `did you mean` or `valid values are`; a host and its port (`<v>:<v>`) and a negative
 * number are one value. So are the command a server refused (`SELECT command denied`) or cannot
 * run (`cannot execute UPDATE in …`), the names after a noun and its participle (`arguments
 * detected: a, b`), the thing an error verb names before a full stop (`failed to execute x.`),
 * the tables and selected columns of an echoed query, the two names of Go's `rename a b:`, a
 * duration glued to a unit (`30sms`) and a value left in its quotes (`class="<v>"`). So is what a
 * template puts in a slot: a programmatic name after the noun of its slot (`parameter row_max_count
 * is …`) or opening a validation (`start_at has wrong type`), three joined words or a digit after
 * the noun of a kind (`tool fetch_error_logs`), a camel-case identifier inside a sentence that
 * ends in the noun of a name (`reportTypeId`), pydantic's echoed `input_value` and the JSON kind
 * Go's decoder met. Words of error vocabulary, nouns of a template (`invalid
 * api key`), a kind alone (`collection not found: x`), an error class (`KeyError`), what a slot has
 * (`parameter value`), a condition code in camel case (`CrashLoopBackOff`) and two joined words
 * that may be a state (`over_quota`) are never taken for values: `failed: timeout` and `failed:
 * refused` stay apart. Pure.
 */

/** Every placeholder `normalizeText` writes for a value. */
const PLACEHOLDER = /<(?:str|v|id|path|host|url|email|ip|dur|size|time)>/g;
/** Values separated by single spaces. */
const SPACED_VALUES = /<v>(?: <v>)+/g;
/** A value alone in quotes. */
const QUOTED_VALUE = /(["'])<v>\1/g;
/** A unit written after a value: the value and its unit are one. */
const UNIT =
  /<v>\s?(?:milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d|bytes?|[kmgt]i?b|%)(?![a-z])/g;
/** A run of values separated by commas, slashes, `and`, `or`. */
const VALUE_LIST = /<v>(?:\s{0,4}(?:,|\/|\||\band\b|\bor\b)\s{0,4}<v>){1,100}/g;

/** A token that may be a value: letters, digits, `_ . -` and placeholders. */
const TOKEN = String.raw`[a-z0-9<>][\w.<>-]{0,60}`;
const TOKENS = String.raw`${TOKEN}(?:,\s?${TOKEN}){0,11}`;
/** Nouns that name a thing whose name may follow a colon. */
const THING =
  "(?:arguments?|parameters?|params|properties|attributes?|flags?|tools?|director(?:y|ies)|tables?|columns?|bindings|indexe?s?|indices|files?|users?|projects?|models?|databases?|collections?|fields?|keys?|branch(?:es)?|repositor(?:y|ies)|buckets?|channels?|workspaces?|organi[sz]ations?|teams?|operations?|commands?|engines?|options|choices|candidates|values|names?|ids?|resources?|services?|regions?|hosts?|servers?|paths?)";
const END = String.raw`(?=[.!;)\n"']|$)`;
/** A participle between the noun and its colon: `arguments detected: a, b`, `fields given: x`. */
const THING_PARTICIPLE =
  "(?: (?:detected|found|given|provided|missing|required|rejected|received|ignored|requested|specified))?";
const AFTER_THING = new RegExp(String.raw`(\b${THING}${THING_PARTICIPLE}: )(${TOKENS})${END}`, "g");
/** A tail after a phrase of absence or refusal: `does not exist: x`, `no such index: x`. */
const AFTER_CONDITION = new RegExp(
  String.raw`(\b(?:does not exist|do not exist|already exists?|not found|no such [a-z]+|not supported|not allowed|disabled|unknown [a-z]+|(?:invalid|unsupported) (?:[a-z]+ ){0,3}[a-z]+): )(${TOKENS}|\.[a-z0-9]{1,10})${END}`,
  "g",
);
/** The thing an error happened in: `error running x:`, `api error in x:`, `arguments for x:`. */
const ERROR_IN =
  /\b((?:(?:error|failed|failure|exception|arguments?|provided) (?:in|running|calling|executing|processing|for|fetching|getting|retrieving|loading|reading|creating|updating|deleting|listing)|failed to (?:fetch|get|retrieve|load|read|create|update|delete|list|find|open|execute|run|call|invoke|start|stop))(?: (?:file|tool|table|collection|index|document|record|item|page|directory|folder|command|function|script|job|task))? )([a-z][\w.<>-]{0,60})(?=:|[.!]?$)/g;
/** A name after the noun of its kind: `tool search disabled`, `owner of table orders`. */
const KINDS =
  "tools?|tables?|relations?|columns?|spaces?|calendars?|propert(?:y|ies)|hosts?|indexe?s?|indices|collections?|fields?|branch(?:es)?|repositor(?:y|ies)|buckets?|channels?|workspaces?|projects?|models?|databases?|operations?|engines?|functions?|variables?|schemas?|views?|topics?|queues?|streams?|namespaces?|pods?|deployments?|clusters?|roles?|accounts?|environments?|regions?|workflows?|jobs?|steps?|labels?|tags?|formats?|languages?|actions?|modes?|methods?|providers?|plans?|scopes?|templates?|policies|policy|secrets?|services?|apps?|applications?|sites?|folders?|sheets?|boards?|issues?|tickets?|agents?|instances?|volumes?|images?|containers?|nodes?|tasks?|pipelines?|stages?|releases?|versions?|packages?|modules?|plugins?|integrations?|connectors?|destinations?|datasets?|dashboards?|metrics?|monitors?|alerts?|zones?|domains?|endpoints?|parameters?|arguments?|filters?|teams?|organi[sz]ations?|orgs?|subscriptions?";
const KIND_NAME = new RegExp(
  String.raw`\b(${KINDS}) ([a-z][\w.<>-]{0,60})(?=[\s(:.,;!)"'\\]|$)`,
  "g",
);
/** A noun of a kind alone: the subject of `collection not found: x` is the kind, not a name. */
const KIND_WORD = new RegExp(`^(?:${KINDS})$`);
/**
 * Nouns of a template a server writes after `invalid` (`invalid api key`, `invalid request body`):
 * words of the message, not a name.
 */
const TEMPLATE_NOUNS = new Set(
  (
    "key keys token tokens secret secrets credential credentials password signature format value " +
    "values input body header headers parameter parameters argument arguments request response " +
    "payload json data syntax query url uri id ids name type range date time number string " +
    "character characters state scope file path option options field fields"
  ).split(" "),
);
/** The one word after `invalid`, `unknown`, `unsupported` and the noun of its kind: `invalid currency xyz`. */
const AFTER_KIND_OF_CONDITION =
  /\b((?:unknown|invalid|unsupported|unrecognized|unrecognised|unexpected) ([a-z]{3,30}) )([a-z][\w.<>/-]{0,60})(?=[.,;!)\n]|$)/g;
/** One token of values joined by `:`, `!`, `@` or `#` (`<v>:<v>` a host and port, `<v>!<v>` a range). */
const JOINED_VALUES = /<v>(?:[:!@#]<v>)+/g;
/** A negative number (`point(-122.4 37.7)`): its sign is part of the value. */
const NEGATIVE_VALUE = /(?<![\w<>)\]-])-<v>/g;
/** What came instead of what was expected, or where a parser stopped: `got c`, `near select`. */
const GOT_OR_NEAR =
  /\b((?:got|but got|received|but received|near|at or near) )([a-z][\w.<>-]{0,60})(?=[.,;!)\n]|$)/g;
/** Names of types: `expected string, received number` names two types, not two values. */
const TYPE_WORDS = new Set(
  "string number boolean object array null undefined integer int float double bigint date function symbol nan".split(
    " ",
  ),
);

/** The thing of an answer that found or allowed nothing: `no results found for x`, `access denied to x`. */
const FOR_TARGET =
  /\b((?:available|found|access|denied|results|matches|data|permissions?|allowed|enabled|supported) (?:for|to|on|in) (?:query |the )?)([a-z][\w.<>-]{0,60})(?=[.,;!)\n]|$)/g;
/** A name before the noun of its kind: `the PutItem operation`, `the X environment variable`. */
const NAME_KIND =
  /\b(the )([a-z][\w.<>-]{0,60})( (?:operation|tool|table|index|collection|environment variable|function|field|column|bucket|database|model|engine|channel|integration|workspace|project|repository|branch|space|calendar|folder|queue|topic|service|cluster|environment|workflow|pipeline|app|site|team|organization|account)s?)\b/g;
/** Identifiers of joined words (`prod_logs`, `my-bucket-<v>`) anywhere, keys of JSON apart. */
const JOINED = /(?<![\w<>.-])[a-z][a-z0-9<>]*(?:[_-][a-z0-9<>]{1,80})+(?![\w<>-]|":|':)/g;
/** Words of a sentence that are never a name. */
const FUNCTION_WORDS = new Set(
  (
    "is are was were has have had does do did not no with the a an for to of in on at by from " +
    "and or must cannot can could should would will may already set that this which name named " +
    "id you your it its be been being as if but so than then there these those same following " +
    "current given requested specified provided other new first last next previous only all any " +
    "some each every call calls called using use"
  ).split(" "),
);
/** Leads of a list of choices. */
const CHOICES = new RegExp(
  String.raw`(\b(?:not in|one of(?: the following| these)?(?: [a-z]+)?:?|expected(?: one of)?:|allowed(?: values)?:|available(?: [a-z]+)?:|supported(?: [a-z]+)?:|valid(?: [a-z]+)?:|choose from:?|did you mean:?|(?:valid|allowed|supported|available|accepted) [a-z]+ (?:are|is|include):?) )(${TOKENS})(?=[.!?;)\n"']|$)`,
  "g",
);
/**
 * The subject of a condition after a colon, at the start or opening a JSON string (`: orders not in <v>`, `: query
 * missing required argument`, `staging does not exist`): one word, then the condition's words.
 */
const SUBJECT_OF_CONDITION =
  /(^|: |\] |")([a-z][\w.<>-]{0,60})(?= (?:is not|are not|was not|were not|does not|do not|did not|not in|not found|missing|is missing|already|must|cannot|can't|has no|have no|is required|is invalid|is unknown|requires|is disabled|is deprecated)\b)/g;
/**
 * Nouns a condition is often about that are no name (`user is not authorized`, `token is
 * invalid`, `session already exists`): kept, so two such conditions stay two.
 */
const SUBJECT_NOUNS = new Set(
  (
    "user users token tokens key keys session sessions request requests account accounts input " +
    "payload body header headers file files credential credentials password secret signature " +
    "email phone address card payment amount price currency date time url path resource " +
    "resources item items record records entry entries value values response result results " +
    "data message content id name type format"
  ).split(" "),
);

/**
 * Whether `word` is a noun a template writes (`table`, `key`, `user`): the noun of a kind, of a
 * template or of a subject, or a word of a sentence. Never the start of a name.
 * @internal For the normalizer.
 */
export function isTemplateNoun(word: string): boolean {
  return (
    KIND_WORD.test(word) ||
    TEMPLATE_NOUNS.has(word) ||
    SUBJECT_NOUNS.has(word) ||
    FUNCTION_WORDS.has(word) ||
    TYPE_WORDS.has(word)
  );
}

/** Whether the `"` at `at` opens a JSON value or list item (`: "`, `:"`, `["`, `, "`). */
function opensValue(text: string, at: number): boolean {
  let before = at - 1;
  if (text.charCodeAt(before) === 32) before--;
  const c = text.charCodeAt(before);
  return c === 58 || c === 91 || c === 44;
}

/**
 * A name between the noun of its kind and a phrase of absence (`texture wood_04 not found`,
 * `collection orders does not exist`): the kind is any word of the sentence, the name one word.
 */
const NAME_BEFORE_ABSENCE =
  /\b([a-z]{3,30} )([a-z][\w.<>-]{0,60})(?= (?:not found|does not exist|do not exist|doesn't exist|is not defined|is undefined|is unknown|was not found|could not be found|cannot be found|is unavailable|is not available|already exists|is not supported|is not enabled|is disabled)\b)/g;
/** Inside every match of NAME_BEFORE_ABSENCE: a cheap test before its pattern runs. */
const ABSENCE_HINT =
  /not found|not exist|n't exist|not defined|undefined|unknown|be found|unavailable|not available|already exists|not supported|not enabled|disabled/;
/** One word after a colon that ends the text or its line (`unable to parse range: orders`). */
/**
 * One word after a colon that ends the text, its line or a JSON string (`unable to parse range:
 * orders`, `{"error": "path must be absolute. received: main"}`).
 */
const LAST_WORD = /(: )([a-z][\w.-]{0,60})(?=[.>)\]]?(?:\s*(?:\n|$)|"\s*[,}\]]))/g;
const NETWORK_TARGET =
  /\b(econnrefused|enotfound|eai_again|ehostunreach|enetunreach|econnreset|etimedout|err_[a-z_]+ at|lookup|dial (?:tcp|udp)[46]?) ([a-z][\w.-]{0,252})/g;
const OPERATION = /\b(calling the )([\w-]{1,80})( operation)\b/g;
/** The file of a system call's error, as Go and Node print it: `open x: permission denied`. */
const SYSCALL_TARGET =
  /\b(open|mkdir|stat|lstat|readdir|unlink|remove|chmod|chown|scandir|rmdir|opendir|readlink) ([^\s:]{1,200}):/g;
/** A name qualified by a value or going on after one: `<v>.orders_2024`, `<v>_address`, `schema.<v>`. */
const QUALIFIED = /<v>(?:[._-][a-z0-9_<>-]{1,60})+|(?<![\w<>.-])[a-z][\w-]{0,60}(?:\.<v>)+/g;
/** A system call's target the normalizer read as a path, colon and all (`open <path> denied`). */
const SYSCALL_PATH =
  /\b(open|mkdir|stat|lstat|readdir|unlink|remove|chmod|chown|scandir|rmdir|opendir|readlink) <v>(?!:)/g;

/**
 * What a server could not find, reach or act on: `could not find orders in …`, `unable to locate
 * x.`, `failed to connect to x`, `cannot merge x into main`. Ends the text or meets a preposition.
 */
const INABILITY =
  /\b((?:could not|couldn't|cannot|can't|unable to|failed to|not able to) (?:find|locate|resolve|load|open|access|reach|delete|remove|merge|connect to|fetch|retrieve|import|start|stop) (?:host )?)([a-z](?:[\w<>-]|\.(?=[\w<])){0,60})(?=[.,;!)\n]|$| (?:in|into|on|at|from|for|because|since|due|with|to)\b)/g;
/** The thing an expectation is about: `expected x to be a number`. */
const EXPECTED_TO =
  /\b(expected )([a-z][\w.<>-]{0,60})(?= to (?:be|have|contain|equal|match|include)\b)/g;
/** What a command was refused: `SELECT command denied`, `deploy command is not allowed`. */
const COMMAND_REFUSED =
  /\b([a-z][\w-]{0,30})( command (?:denied|not allowed|is not allowed|not permitted|is not permitted|is disabled|not supported|is not supported|is forbidden))\b/g;
/** What cannot run where it was asked: `cannot execute UPDATE in a read-only transaction`. */
const CANNOT_EXECUTE =
  /\b(cannot (?:execute|run|perform) )([a-z][\w.<>-]{0,60})(?= (?:in|on|during|while|inside|within|against) )/g;
/** A system call of two names, as Go prints it: `rename a b: file exists`, `link a b: …`. */
const SYSCALL_TWO = /\b(rename|link|symlink) ([^\s:]{1,200}) ([^\s:]{1,200}):/g;
/**
 * A duration glued to the unit a template writes after its number (`within 30sms` for
 * `within ${n}ms` given `30s`, `2m15sms`): the value with its units is one.
 */
const GLUED_UNITS =
  /<v>(?:\d{1,9}(?:\.\d{1,9})?(?:ms|us|ns|h|m|s))*(?:ms|us|ns|h|m|s){1,3}(?![a-z0-9])/g;
/** Where a text echoes SQL: a query's `select … from`, `insert into`, `delete from`, `update … set`. */
const SQL_SHAPE =
  /\bselect\b[^;]{0,200}?\bfrom\b|\binsert into\b|\bdelete from\b|\bupdate [\w.<>]{1,60} set\b/;
/** A table after its SQL word, or the columns a query selects: names of the call, not the query's. */
const SQL_TABLE = /\b(from|join|into|update) ([a-z_][\w.<>]{0,60})(?=[\s;)\]]|$)/g;
const SQL_COLUMNS = new RegExp(String.raw`\b(select (?:distinct )?)(${TOKENS})(?= from\b)`, "g");
/** SQL's own words, never a table's name. */
const SQL_WORDS = new Set(
  (
    "select from where insert into update set values join inner outer left right full cross " +
    "and or not null limit offset order group by having union all distinct as on in is like " +
    "between exists case when then else end returning with lateral only"
  ).split(" "),
);

/** Nouns of a slot a call fills: the word right after one, before a predicate, names the slot. */
const SLOT_NOUNS = [
  "parameter",
  "param",
  "argument",
  "arg",
  "field",
  "property",
  "column",
  "attribute",
  "option",
  "variable",
];
const SLOT = `(?:${SLOT_NOUNS.join("|")})s?`;
/** Inside every match of a pattern with SLOT: the stem of one of its nouns (`propert` of both). */
const SLOT_HINT = new RegExp(SLOT_NOUNS.map((noun) => noun.replace(/y$/, "")).join("|"));
/**
 * The name of a slot after its noun, before what is said of it: `parameter limit is not of type
 * string`, `invalid parameter row_max_count: must be`, `field id cannot be empty`.
 */
const SLOT_THEN_NAME = new RegExp(
  String.raw`\b(${SLOT} )(\$?[a-z][\w.$-]{0,60})(?=:| (?:is|are|was|were|must|cannot|can't|should|has|have|does|do|referenced|exceeds)\b)`,
  "g",
);
/** The name of a slot before its noun: `url parameter is required`, `name field must not be empty`. */
const NAME_THEN_SLOT = new RegExp(
  String.raw`(^|[:.,;(\[{"] )([a-z][\w.$-]{0,60})( ${SLOT} (?:is required|is missing|are required|are missing|must|cannot|should|is not|is empty|missing|required)\b)`,
  "g",
);
/**
 * Names of a slot a call often fills that are also words of a template or of error vocabulary
 * (`id`, `name`, `limit`, `status`): after (or before) the noun of a slot they are its name.
 */
const SLOT_NAMES = new Set(
  (
    "id ids name names type types status limit url uri email title number query start end step " +
    "page size format value key keys path code description text message data content count " +
    "offset order sort filter state mode scope date time token password username user login " +
    "region version label tag tags body phone address amount currency price file files input " +
    "payload header headers range length"
  ).split(" "),
);

/**
 * The slot a validation is about, opening a sentence: `name must not be blank`, `start has wrong
 * type`, `summary exceeds maximum length`. What a validator says of one slot it says of any.
 */
const VALIDATED_SLOT =
  /(^|: |\] |"|\. )([a-z][\w.$-]{0,60})(?= (?:is required|are required|must (?:not )?(?:be|contain|have|match|exceed)|cannot be (?:empty|blank|null)|should (?:not )?be|exceeds (?:the )?max(?:imum)?|has (?:the )?wrong type|is too (?:long|short|large|small)|is not of type)\b)/g;
/** Inside every match of VALIDATED_SLOT. */
const VALIDATED_HINT = /required|must|cannot be|should|exceeds|wrong type|is too|not of type/;

/**
 * Whether an identifier written in camel case (`sessionsPerUser`, `PromptVersion`) names a thing:
 * none of its words is error vocabulary or a word of a sentence (`AccessDenied`, `ResourceInUse`
 * name a condition) unless it is a common name of a slot (`issueTypeId`), and it is no error
 * class.
 */
function plainCamel(word: string): boolean {
  const lower = word.toLowerCase();
  if (isErrorClass(lower)) return false;
  const parts = word.split(/(?=[A-Z])/);
  // A name ends in the noun of one (`reportTypeId`, `datasetName`, `webhookUrl`): a code of a
  // condition or a state in camel case (`CrashLoopBackOff`, `SpotInterruption`, `SlowDown`)
  // does not, and is the failure itself.
  if (!NAME_ENDINGS.has((parts[parts.length - 1] as string).toLowerCase())) return false;
  for (const part of parts) {
    const p = part.toLowerCase();
    // A common name of a slot (`issueTypeId`, `statusCode`) is a word of a name here.
    if (SLOT_NAMES.has(p)) continue;
    if (vocabulary.has(p) || FUNCTION_WORDS.has(p) || isErrorClass(p)) return false;
  }
  return true;
}

/** The last word of a camel-case identifier that names a thing. */
const NAME_ENDINGS = new Set(
  "id ids name names key keys uri url path number title label slug email handle ref arn".split(" "),
);

/**
 * What a slot has rather than what it is called (`parameter value is too long`, `field count
 * exceeds`, `column type has changed`): after the noun of a slot, a word of the condition.
 */
const SLOT_ATTRIBUTES = new Set(
  "name names value values type types count length size order format key keys".split(" "),
);

/** Whether `word`, after the noun of a slot, is the slot's name. */
function slotName(word: string): boolean {
  const bare = word.startsWith("$") ? word.slice(1) : word;
  if (SLOT_ATTRIBUTES.has(bare)) return false;
  return SLOT_NAMES.has(bare) || (!isTemplateNoun(bare) && nameLike(bare)) || joinedName(bare);
}

/**
 * Whether an identifier of joined words (`row_max_count`, `fetch_error_logs`) names a thing where the
 * noun of its kind stands before it: one of its words at least is neither error vocabulary nor a
 * word of a sentence, and none is a participle (`not_found`, `read_only`, `content_filtered` name
 * a condition).
 */
function joinedName(word: string): boolean {
  if (!/^[a-z][a-z0-9]*(?:[_-][a-z0-9]+)+$/.test(word)) return false;
  const parts = word.split(/[_-]/);
  // A participle (`content_filtered`) says what happened: a condition.
  if (parts.some((part) => part.length >= 5 && part.endsWith("ed"))) return false;
  return parts.some(
    (part) =>
      /^[a-z]{2,}$/.test(part) &&
      !vocabulary.has(part) &&
      !isErrorClass(part) &&
      !FUNCTION_WORDS.has(part),
  );
}

/**
 * Whether joined words after the noun of a kind name a thing rather than a state of it: three
 * words or more, or a digit (`fetch_error_logs`, `row_max_count`, `worker_2`); two words are as
 * often a state or a code (`over_quota`, `write_block`, `in_progress`).
 */
function namesAThing(word: string): boolean {
  return /\d/.test(word) || word.split(/[_-]/).length >= 3;
}

/**
 * The input a validator echoes (pydantic's `[type=missing, input_value={'a': 1}, input_type=dict]`):
 * the call's own value, whatever its shape.
 */
const ECHOED_INPUT = /\b(input_value=)[^\n]{0,400}?(?=, input_type=)/g;

/**
 * The JSON kind Go's decoder met where another was expected (`json: cannot unmarshal string into
 * Go struct field …`): what the call sent, as `got <v>` is. The expected type stays.
 */
const UNMARSHALLED_KIND =
  /\b(cannot unmarshal )(?:object|array|string|number|bool|boolean|null)(?= into\b)/g;

/** Words of error vocabulary a value never is (the normalizer's, and a few of its own). */
let vocabulary: ReadonlySet<string> = new Set();

/** @internal Set once by fingerprint.ts with its vocabulary (no import cycle). */
export function useVocabulary(words: ReadonlySet<string>): void {
  vocabulary = words;
}

function plain(tokens: string): boolean {
  for (const token of tokens.split(/,\s?/)) {
    for (const part of token.split(/[_.-]/)) {
      if (vocabulary.has(part) || isErrorClass(part)) return false;
    }
  }
  return true;
}

/**
 * Whether a word names an error class (`KeyError`, `TimeoutException`, lowercased): a word that
 * ends in `error(s)` or `exception(s)` after another letter. Never a value.
 */
function isErrorClass(word: string): boolean {
  const bare = word.endsWith("s") ? word.slice(0, -1) : word;
  return (
    (bare.length > 5 && bare.endsWith("error")) || (bare.length > 9 && bare.endsWith("exception"))
  );
}

function valueIfPlain(_m: string, lead: string, tokens: string): string {
  // A list of two or more is values, whatever words it holds (`not in read, write`).
  return plain(tokens) || /,\s?\S/.test(tokens) ? `${lead}<v>` : _m;
}

/** A single word that may be a name: not error vocabulary, not a word of the sentence. */
function nameLike(word: string): boolean {
  // An adverb (`service temporarily unavailable`) or a participle (`job started`, `arguments
  // detected`) is a word of the sentence.
  return (
    !FUNCTION_WORDS.has(word) &&
    !word.endsWith("ly") &&
    !(word.length >= 5 && word.endsWith("ed")) &&
    plain(word)
  );
}

/**
 * Every occurrence of `word` not inside a longer token becomes `<v>`: as
 * `/(?<![\w<>.-])word(?![\w<>-])/g` would, without compiling a pattern for each word.
 */
function replaceEcho(text: string, word: string): string {
  let out = "";
  let copied = 0;
  for (let at = text.indexOf(word); at >= 0; at = text.indexOf(word, at + word.length)) {
    const end = at + word.length;
    const before = text.charCodeAt(at - 1);
    if (before === 46 || before === 45 || valueCharBefore(text, at)) continue;
    if (text.charCodeAt(end) === 45 || valueCharAt(text, end)) continue;
    out += `${text.slice(copied, at)}<v>`;
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * The form of a normalized text that is hashed. `codes` are the identifiers the original text
 * wrote in capitals (`QUEUE_FULL`), lower-cased as the normalizer leaves them: each is the
 * condition's code where only its shape or its place at the end would make it a value
 * (`request rejected: QUEUE_FULL` and `request rejected: CONTENT_FILTERED` are two conditions);
 * where the text says a value stands (after the noun of its kind, `invalid … type:`, or as the
 * name of a setting, `LOG_LEVEL=debug`) it is still a value.
 */
export function foldValues(
  normalized: string,
  codes?: ReadonlySet<string>,
  camels?: readonly string[],
): string {
  let s = normalized;
  if (camels !== undefined) {
    for (const word of camels) if (plainCamel(word)) s = replaceEcho(s, word.toLowerCase());
  }
  if (s.includes("<")) s = s.replace(PLACEHOLDER, "<v>");
  if (s.includes("input_value=")) s = s.replace(ECHOED_INPUT, "$1<v>");
  if (s.includes("unmarshal ")) s = s.replace(UNMARSHALLED_KIND, "$1<v>");
  const colonSpace = s.includes(": ");
  if (colonSpace) s = s.replace(AFTER_THING, valueIfPlain);
  s = s.replace(CHOICES, valueIfPlain);
  if (s.includes(" operation")) s = s.replace(OPERATION, "$1<v>$3");
  if (colonSpace) s = s.replace(AFTER_CONDITION, valueIfPlain);
  // Names read from their context, remembered so that their echoes become values too.
  const seen: string[] = [];
  const name = (m: string, lead: string, word: string, tail = "") => {
    if (!nameLike(word)) return m;
    if (word.length >= 3 && !word.includes("<") && seen.length < 8) seen.push(word);
    return `${lead}<v>${tail}`;
  };
  if (s.includes(":") || s.includes("failed to ")) {
    s = s.replace(ERROR_IN, (m, lead: string, word: string, offset: number, whole: string) => {
      if (whole.charCodeAt(offset + m.length) === 58) return name(m, lead, word);
      // At the end of the text, its full stop is not the name's, and a noun of a template
      // (`failed to fetch data.`) is no name.
      const bare = word.replace(/\.+$/, "");
      return TEMPLATE_NOUNS.has(bare) || SUBJECT_NOUNS.has(bare)
        ? m
        : name(m, lead, bare, word.slice(bare.length));
    });
  }
  s = s.replace(
    SUBJECT_OF_CONDITION,
    (m, lead: string, word: string, offset: number, whole: string) =>
      KIND_WORD.test(word) ||
      SUBJECT_NOUNS.has(word) ||
      (lead === '"' && !opensValue(whole, offset))
        ? m
        : name(m, lead, word),
  );
  if (VALIDATED_HINT.test(s)) {
    s = s.replace(VALIDATED_SLOT, (m, lead: string, word: string, offset: number, whole: string) =>
      (lead === '"' && !opensValue(whole, offset)) ||
      // A plain word (`prompt is too long`, `workspace is required`) may be the slot or the
      // condition (`authorization is required`): only a programmatic name is folded.
      !(nameLike(word) && /[_.$\d]/.test(word) && !KIND_WORD.test(word))
        ? m
        : name(m, lead, word),
    );
  }
  if (colonSpace) {
    s = s.replace(LAST_WORD, (m, lead: string, word: string) =>
      codes?.has(word) ? m : name(m, lead, word),
    );
  }
  if (ABSENCE_HINT.test(s)) {
    // A noun of a kind is no name (`the orders channel does not exist`: `orders` is).
    s = s.replace(NAME_BEFORE_ABSENCE, (m, kind: string, word: string) =>
      FUNCTION_WORDS.has(kind.trimEnd()) || vocabulary.has(kind.trimEnd()) || KIND_WORD.test(word)
        ? m
        : name(m, kind, word),
    );
  }
  if (s.includes("the ")) {
    s = s.replace(NAME_KIND, (m, the: string, word: string, kind: string) =>
      name(m, the, word, kind),
    );
  }
  if (SLOT_HINT.test(s)) {
    s = s.replace(SLOT_THEN_NAME, (m, lead: string, word: string) =>
      slotName(word) ? `${lead}<v>` : m,
    );
    // Before the noun, only a common name of a slot: a server that writes each slot's own
    // sentence (`datasetName parameter is required`) writes another template for each.
    s = s.replace(NAME_THEN_SLOT, (m, lead: string, word: string, tail: string) =>
      SLOT_NAMES.has(word) ? `${lead}<v>${tail}` : m,
    );
  }
  s = s.replace(KIND_NAME, (m, kind: string, word: string) =>
    joinedName(word) && namesAThing(word) ? `${kind} <v>` : name(m, `${kind} `, word),
  );
  s = s.replace(AFTER_KIND_OF_CONDITION, (m, lead: string, kind: string, word: string) =>
    FUNCTION_WORDS.has(kind) ||
    vocabulary.has(kind) ||
    TEMPLATE_NOUNS.has(word) ||
    TEMPLATE_NOUNS.has(kind)
      ? m
      : name(m, lead, word),
  );
  s = s.replace(FOR_TARGET, (m, lead: string, word: string) => name(m, lead, word));
  // Each lead of GOT_OR_NEAR holds `got `, `received ` or `near `: most texts hold none.
  if (s.includes("got ") || s.includes("received ") || s.includes("near ")) {
    s = s.replace(GOT_OR_NEAR, (m, lead: string, word: string) =>
      TYPE_WORDS.has(word) ? m : name(m, lead, word),
    );
  }
  // Each lead of INABILITY holds `could`, `can`, `unable`, `failed to` or `not able`.
  if (
    s.includes("could") ||
    s.includes("can") ||
    s.includes("unable") ||
    s.includes("failed to") ||
    s.includes("not able")
  ) {
    s = s.replace(INABILITY, (m, lead: string, word: string) =>
      isTemplateNoun(word) ? m : name(m, lead, word),
    );
  }
  if (s.includes("expected ")) {
    s = s.replace(EXPECTED_TO, (m, lead: string, word: string) =>
      isTemplateNoun(word) ? m : name(m, lead, word),
    );
  }
  if (s.includes(" command ")) {
    s = s.replace(COMMAND_REFUSED, (m, word: string, tail: string) => name(m, "", word, tail));
  }
  if (s.includes("cannot ")) {
    s = s.replace(CANNOT_EXECUTE, (m, lead: string, word: string) => name(m, lead, word));
  }
  // Every shape of SQL_SHAPE holds `select`, `insert into`, `delete from` or `update `: most
  // texts hold none.
  if (
    (s.includes("select") ||
      s.includes("insert into") ||
      s.includes("delete from") ||
      s.includes("update ")) &&
    SQL_SHAPE.test(s)
  ) {
    s = s.replace(SQL_TABLE, (m, keyword: string, table: string) =>
      SQL_WORDS.has(table) ? m : name(m, `${keyword} `, table),
    );
    s = s.replace(SQL_COLUMNS, (m, lead: string, columns: string) =>
      columns.split(/,\s?/).some((c) => SQL_WORDS.has(c)) ? m : `${lead}<v>`,
    );
  }
  for (const word of seen) s = replaceEcho(s, word);
  if (s.includes("_") || s.includes("-")) {
    s = s.replace(JOINED, (m, at: number, whole: string) =>
      (codes?.has(m) && whole.charCodeAt(at + m.length) !== 61) || !plain(m.replace(/<v>/g, ""))
        ? m
        : "<v>",
    );
  }
  s = s.replace(NETWORK_TARGET, (m, code: string, target: string) =>
    vocabulary.has(target) ? m : `${code} <v>`,
  );
  if (s.includes(":")) {
    s = s.replace(SYSCALL_TARGET, (m, call: string, target: string) =>
      plain(target) ? `${call} <v>:` : m,
    );
    if (s.includes("link ") || s.includes("rename ")) {
      s = s.replace(SYSCALL_TWO, (m, call: string, from: string, to: string) =>
        plain(from) && plain(to) ? `${call} <v> <v>:` : m,
      );
    }
  }
  if (s.includes("<v>")) {
    s = s.replace(JOINED_VALUES, "<v>").replace(NEGATIVE_VALUE, "<v>");
    s = s.replace(QUALIFIED, (m) => (plain(m.replace(/<v>/g, "")) ? "<v>" : m));
    s = s.replace(SYSCALL_PATH, "$1 <v>:");
    s = s.replace(UNIT, "<v>").replace(GLUED_UNITS, "<v>").replace(VALUE_LIST, "<v>");
    // Values side by side are one value of words (`Marketing Site`, `Sheet 1`).
    if (s.includes("<v> <v>")) s = s.replace(SPACED_VALUES, "<v>");
    // A value left in its quotes (`class="form-row"`, kept as a condition's name until its
    // identifier was read) is the value.
    if (s.includes('"<v>"') || s.includes("'<v>'")) s = s.replace(QUOTED_VALUE, "<v>");
  }
  return s;
}

/**
 * A value the call sent, as it may stand in a normalized text: on one line, without spaces at its
 * ends, with a letter. Any punctuation, brackets and quotes the model put around or inside it
 * (`(drafts)`, `{drafts}`, `drafts!`, `Q3 summary (draft)`) are part of it, and so are the
 * placeholders the normalizer writes inside a word (`abc<id>xyz` for `abc123XYZ`).
 */
const ARGUMENT_VALUE = /^\S[^\n\r\t]{0,118}\S$/u;
/** A letter of a script without case (Chinese, Japanese): two of them are a name (`东京`). */
const UNCASED_LETTER = /\p{Lo}/u;
const HAS_LETTER = /\p{L}/u;
/** Spaces a value sent with them left beside `<v>`, before punctuation or after an opening. */
const SPACE_BEFORE = /<v> +(?=[:;,.!?)\]}]|$)/g;
const SPACE_AFTER = /(?<=[([{]|^) +<v>/g;
/**
 * At most this many values of the arguments are looked for (each in a few forms: as sent, trimmed
 * or URL-encoded, normalized).
 */
const MAX_ARGUMENT_VALUES = 96;
/**
 * What a text keeps of its own once the call's values are out: a word of two letters or more, in
 * any script (`город <v> не найден`).
 */
const OWN_WORD = /(?<![<\p{L}\p{N}_])\p{L}{2,}(?![\p{L}\p{N}_>])/u;

/**
 * The normalized text with each word the call sent itself (a value of `values`, the call's
 * arguments lower-cased) replaced by `<v>`: `table orders not found` for a call with
 * `{ table: "orders" }` reads as `table <v> not found`, whatever the table. Whole words only, and
 * only values the normalizer left as words (a path or a number is read by its shape already).
 * Not replaced: numbers, a value made only of error vocabulary or of words of a sentence
 * (`{ state: "failed" }` keeps `failed`), and every value when the text would be left with no
 * word of its own (the answer is the value: `Unauthorized` for a search of "unauthorized"). Pure.
 */
export function foldArgumentValues(normalized: string, values: readonly string[]): string {
  let out = normalized;
  let looked = 0;
  // Longest first: a value inside another is replaced with it.
  const sorted = [...values].sort((a, b) => b.length - a.length);
  for (const value of sorted) {
    if (looked >= MAX_ARGUMENT_VALUES) break;
    if (letterCount(value) < (UNCASED_LETTER.test(value) ? 2 : 3)) continue;
    if (!ARGUMENT_VALUE.test(value) || !HAS_LETTER.test(value)) continue;
    // A list the call sent is its values whatever words it holds (`read, write`), as in the text.
    const list = /,\s?\S/.test(value);
    if (!list && !value.split(/[\s_.,'-]+/).some((w) => w.length > 0 && nameLike(w))) continue;
    looked++;
    out = replaceWholeValue(out, value);
  }
  if (out === normalized || !OWN_WORD.test(out.replace(/<[a-z]+>/g, " "))) return normalized;
  return out.includes("<v> ") || out.includes(" <v>")
    ? out.replace(SPACE_BEFORE, "<v>").replace(SPACE_AFTER, "<v>")
    : out;
}

/**
 * How many characters `value` has, up to 3 (all the minimum length asks): a letter outside the
 * BMP is one, not the two UTF-16 units `length` counts.
 */
function letterCount(value: string): number {
  if (value.length >= 6) return 3;
  let n = 0;
  for (const _ of value) if (++n >= 3) break;
  return n;
}

/** Every occurrence of `value` in `text` between non-word characters becomes `<v>`. */
function replaceWholeValue(text: string, value: string): string {
  let out = "";
  let copied = 0;
  for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + 1)) {
    if (at < copied) continue;
    const end = at + value.length;
    if (valueCharBefore(text, at) || valueCharAt(text, end)) continue;
    out += `${text.slice(copied, at)}<v>`;
    copied = end;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * Whether the character at `at` of `text` continues a word or a placeholder: `[a-z0-9_<>]` or a
 * letter (or mark) of another script. Past the end is not. A letter outside the BMP (Deseret,
 * mathematical bold, CJK Extension B) is two UTF-16 units: the sticky pattern reads the whole
 * code point that starts at `at`, where one unit alone would be no letter.
 */
function valueCharAt(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  if (code < 128 || Number.isNaN(code)) return isAsciiValueChar(code);
  LETTER_AT.lastIndex = at;
  return LETTER_AT.test(text);
}

/** Whether the character that ends just before `at` continues a word (see {@link valueCharAt}). */
function valueCharBefore(text: string, at: number): boolean {
  if (at <= 0) return false;
  const code = text.charCodeAt(at - 1);
  // The second unit of a surrogate pair: the character starts one unit earlier.
  const pair = code >= 0xdc00 && code <= 0xdfff && at >= 2 && isHighSurrogate(text, at - 2);
  return valueCharAt(text, pair ? at - 2 : at - 1);
}

function isHighSurrogate(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  return code >= 0xd800 && code <= 0xdbff;
}

/** `[a-z0-9_<>]`; NaN (past either end) is not. */
function isAsciiValueChar(code: number): boolean {
  return (
    (code >= 97 && code <= 122) ||
    (code >= 48 && code <= 57) ||
    code === 95 ||
    code === 60 ||
    code === 62
  );
}
/** A letter or mark, one code point, read where `lastIndex` stands. */
const LETTER_AT = /[\p{L}\p{M}]/uy;

/**
 * Every pattern of the fold, for the linear-time checks in the tests.
 * @internal Exported for tests; not part of the public API.
 */
export const FOLD_PATTERNS: readonly RegExp[] = [
  PLACEHOLDER,
  SPACED_VALUES,
  QUOTED_VALUE,
  UNIT,
  VALUE_LIST,
  AFTER_THING,
  AFTER_CONDITION,
  ERROR_IN,
  KIND_NAME,
  KIND_WORD,
  SLOT_HINT,
  SLOT_THEN_NAME,
  NAME_THEN_SLOT,
  ECHOED_INPUT,
  UNMARSHALLED_KIND,
  VALIDATED_SLOT,
  VALIDATED_HINT,
  AFTER_KIND_OF_CONDITION,
  JOINED_VALUES,
  NEGATIVE_VALUE,
  GOT_OR_NEAR,
  FOR_TARGET,
  NAME_KIND,
  JOINED,
  CHOICES,
  SUBJECT_OF_CONDITION,
  NAME_BEFORE_ABSENCE,
  ABSENCE_HINT,
  LAST_WORD,
  NETWORK_TARGET,
  OPERATION,
  SYSCALL_TARGET,
  QUALIFIED,
  SYSCALL_PATH,
  INABILITY,
  EXPECTED_TO,
  COMMAND_REFUSED,
  CANNOT_EXECUTE,
  SYSCALL_TWO,
  GLUED_UNITS,
  SQL_SHAPE,
  SQL_TABLE,
  SQL_COLUMNS,
  ARGUMENT_VALUE,
  OWN_WORD,
];
