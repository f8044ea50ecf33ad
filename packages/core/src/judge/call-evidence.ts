/**
 * What the call itself tells about its failure (issue 12.3): the arguments the model sent and,
 * for MCP, the tool's input schema. An error that echoes an argument's value or names a schema
 * property is about the arguments; a path or host the text names that appears nowhere in the
 * arguments is on the server's own side (its storage, its database host), which the model cannot
 * change. Pure: reads the text, the arguments and the schema, nothing else.
 */

import { splitIdentifiers } from "./rules.ts";

/** What a run knows of the call that failed. */
export interface CallFacts {
  /** The arguments the model sent. */
  readonly args?: Readonly<Record<string, unknown>>;
  /** The tool's input JSON Schema (an MCP tool's `inputSchema`). */
  readonly inputSchema?: unknown;
  /**
   * What was read before from the raw text and the arguments (a decision event's
   * `input.evidence`): used as it is, instead of reading the text and arguments again. `governor
   * replay` passes it, since a log keeps neither the arguments nor the raw text.
   */
  readonly evidence?: CallEvidence;
}

/** What the text shares with the call. */
export interface CallEvidence {
  /**
   * The argument the text is about: the name of an argument whose value the text echoes, or of a
   * schema property the text names; where the text names none, an argument by which the call
   * breaks its own schema (`schema`: a required property it did not send, a value of another type
   * or outside the property's `enum`). Names only, never values.
   */
  readonly argument?: { readonly name: string; readonly by: "value" | "property" | "schema" };
  /**
   * The paths, URLs and hosts the text names: `none` when it names none, `own` when one of them
   * is (in) an argument, `foreign` when the arguments hold none of them.
   */
  readonly targets: "none" | "own" | "foreign";
  /**
   * The call's input schema was known and the text names none of its properties nor any value the
   * call sent: set on a correction marked `unbackedByCall` (classify.ts), so that a decision log
   * replayed without the call reads the same.
   */
  readonly schema?: true;
}

const NO_EVIDENCE: CallEvidence = { targets: "none" };

/** How much of the text and of the arguments is looked at: bounded whatever a caller sends. */
const TEXT_LIMIT = 4000;
const MAX_LEAVES = 200;
const MAX_DEPTH = 6;
const MAX_PROPERTIES = 200;

/** `https://host/…` and `host:port` after a connect or resolve failure. */
const URL_HOST =
  /\b[a-z][a-z0-9+.-]{0,20}:\/\/(?:[^\s/@"'`<>]*@)?(\[[^\]\s]{1,60}\]|[^\s/:?#"'`<>()]{1,255})/gi;
const HOST_AFTER =
  /\b(?:ENOTFOUND|EAI_AGAIN|ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|resolve host:?|connect to|connecting to|no such host:?)\s+['"`]?(\[[^\]\s]{1,60}\]|[a-z0-9](?:[a-z0-9_-]{0,62}\.)*[a-z0-9_-]{1,63})/gi;
/** A URL's scheme and `//`, as it opens one. */
const SCHEME = /^[a-z][a-z0-9+.-]{0,20}:\/\//i;
/** A URL of the text, up to the first space or quote (where a quoted URL ends). */
const URL_TOKEN = /\b[a-z][a-z0-9+.-]{0,20}:\/\/[^\s"'`<>]+/gi;

/**
 * Whether a value the call sent is itself a URL the text names whole (`Invalid URL: https://…`):
 * one of the text's URLs is the value, or the value followed by punctuation that ends a
 * sentence (not a longer URL the value only opens).
 */
function holdsWholeUrl(head: string, value: string): boolean {
  if (!SCHEME.test(value)) return false;
  for (const [url] of head.matchAll(URL_TOKEN)) {
    if (
      url === value ||
      (url.startsWith(value) && /^[.,;:!?)\]]+$/.test(url.slice(value.length)))
    ) {
      return true;
    }
  }
  return false;
}

/** An absolute POSIX or Windows path of two segments or more. */
const ABSOLUTE_PATH =
  /(?<![\w.~:/\\-])(?:\/[^\s/"'`<>()[\]{}|,;:]+){2,}|(?<![\w\\/])[a-z]:[\\/][^\s"'`<>|?*()[\]{},;]+/gi;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null;
}

interface Leaf {
  readonly name: string;
  readonly value: string;
}

/** String (and long number) leaves of the arguments, with the name of their top-level argument. */
function leaves(args: Readonly<Record<string, unknown>>): Leaf[] {
  const out: Leaf[] = [];
  for (const key of Object.keys(args)) walkLeaves(out, key, args[key], 0);
  return out;
}

function walkLeaves(out: Leaf[], name: string, value: unknown, depth: number): void {
  if (out.length >= MAX_LEAVES || depth > MAX_DEPTH) return;
  if (typeof value === "string") {
    out.push({ name, value });
  } else if (typeof value === "number" && Number.isFinite(value)) {
    out.push({ name, value: String(value) });
  } else if (Array.isArray(value)) {
    for (const item of value) walkLeaves(out, name, item, depth + 1);
  } else if (isRecord(value)) {
    for (const key of Object.keys(value)) walkLeaves(out, name, value[key], depth + 1);
  }
}

/** Property names of a JSON Schema (nested objects and array items included), bounded. */
function schemaProperties(schema: unknown): string[] {
  const out: string[] = [];
  walkSchema(out, schema, 0);
  return out;
}

function walkSchema(out: string[], node: unknown, depth: number): void {
  if (!isRecord(node) || depth > MAX_DEPTH || out.length >= MAX_PROPERTIES) return;
  const properties = node.properties;
  if (isRecord(properties)) {
    for (const key of Object.keys(properties)) {
      if (out.length >= MAX_PROPERTIES) return;
      out.push(key);
      walkSchema(out, properties[key], depth + 1);
    }
  }
  if (isRecord(node.items)) walkSchema(out, node.items, depth + 1);
}

/**
 * Whether `word` stands in the text as a whole word (not inside another identifier), followed by
 * what `next` matches where it is given.
 */
function namesWord(text: string, word: string, next?: RegExp): boolean {
  let from = 0;
  for (;;) {
    const at = text.indexOf(word, from);
    if (at < 0) return false;
    const before = at === 0 ? "" : text.charAt(at - 1);
    const end = at + word.length;
    const after = text.charAt(end);
    if (
      !/[\w-]/.test(before) &&
      !/[\w-]/.test(after) &&
      (next === undefined || next.test(text.slice(end, end + 40)))
    ) {
      return true;
    }
    from = at + 1;
  }
}

/**
 * A value worth looking for in the text: long enough not to match by chance, and not a word
 * every error carries.
 */
const COMMON = new Set(["true", "false", "null", "none", "error", "default", "the", "and"]);
function distinctive(value: string): boolean {
  const v = value.trim();
  return v.length >= 3 && v.length <= 500 && !COMMON.has(v.toLowerCase());
}

/** A name a schema author gives a property, as the text would name it: a word of 3+ characters. */
function nameable(name: string): boolean {
  return name.length >= 3 && name.length <= 80 && /^[\w.-]+$/.test(name);
}

/**
 * What follows a property the text names in its own words, for those words to be the argument:
 * a noun that says so (`Script parameter`), or what is wrong with it (`dns account is required`,
 * `base path is not valid`). Without it the words are the text's own English (`Request was
 * throttled` is no property `request`; `for this source branch` says where, not what to change).
 */
const NAMED_AS_ARGUMENT =
  /^\s+(?:(?:parameter|argument|field|property|option|value)s?\b|(?:is |are |was )?(?:required|missing|invalid|not valid|not a valid|must|should|cannot be|may not)\b)/i;

/**
 * Whether the text names a property: as written (`basePath`), or in the server's prose where it
 * is named as an argument ({@link NAMED_AS_ARGUMENT}): capitalized as a sentence opens it
 * (`Script parameter must be …` for `script`), or in the words of the identifier, any case, when
 * it has two or more (`base path is not valid` for `basePath`, `DNS account is required` for
 * `dnsAccount`). `lowerHead` is the text lower-cased.
 */
function namesProperty(head: string, lowerHead: string, name: string): boolean {
  if (namesWord(head, name)) return true;
  const capitalized = name.charAt(0).toUpperCase() + name.slice(1);
  if (capitalized !== name && namesWord(head, capitalized, NAMED_AS_ARGUMENT)) return true;
  const words = splitIdentifiers(name)
    .toLowerCase()
    .split(/[\s.-]+/)
    .filter((w) => w !== "");
  const phrase = words.join(" ");
  return words.length >= 2 && phrase.length >= 6 && namesWord(lowerHead, phrase, NAMED_AS_ARGUMENT);
}

/** The JSON type of an argument's value, as a schema's `type` names it. */
function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

/** The seven types of JSON Schema: a `type` naming anything else says nothing that can be checked. */
const JSON_TYPES = new Set(["null", "boolean", "object", "array", "number", "integer", "string"]);

/**
 * Whether a value is plainly not of the types a property declares: only where the property
 * declares its types as JSON Schema names them and nothing widens them (`nullable`, `anyOf`,
 * `oneOf`), and not for a number sent as its digits (`"5"` for a `number`: many servers take it).
 */
function breaksType(value: unknown, property: Readonly<Record<string, unknown>>): boolean {
  const declared = property.type;
  if (declared === undefined || "nullable" in property) return false;
  if ("anyOf" in property || "oneOf" in property) return false;
  const types = Array.isArray(declared) ? declared : [declared];
  if (types.length === 0 || !types.every((t) => typeof t === "string" && JSON_TYPES.has(t))) {
    return false;
  }
  const actual = jsonType(value);
  if (types.some((t) => t === actual || (t === "number" && actual === "integer"))) return false;
  const numeric = types.includes("number") || types.includes("integer");
  return !(numeric && typeof value === "string" && /^-?\d+(?:\.\d+)?$/.test(value.trim()));
}

/** Whether a value is outside an `enum` of plain values (one of objects or arrays is not read). */
function breaksEnum(value: unknown, values: unknown): boolean {
  if (!Array.isArray(values) || values.length === 0) return false;
  if (!values.every((e) => e === null || typeof e !== "object")) return false;
  return !values.some((e) => e === value);
}

/**
 * The first top-level argument by which the call plainly breaks its own input schema: a
 * `required` property it did not send, or a value it sent of another `type` than the property
 * declares (`breaksType`), or outside its `enum` of plain values. The call alone then shows that a
 * correction is right (the model left out or misshaped that argument), whatever the text names.
 * Properties the schema does not declare are not read (a schema need not list them all), nor are
 * nested ones, nor names no text could name (`nameable`). Bounded.
 */
function breaksSchema(
  args: Readonly<Record<string, unknown>>,
  schema: unknown,
): string | undefined {
  if (!isRecord(schema)) return undefined;
  const required = Array.isArray(schema.required) ? schema.required.slice(0, MAX_PROPERTIES) : [];
  for (const name of required) {
    if (typeof name === "string" && nameable(name) && !Object.hasOwn(args, name)) return name;
  }
  const properties = schema.properties;
  if (!isRecord(properties)) return undefined;
  for (const name of Object.keys(args).slice(0, MAX_PROPERTIES)) {
    const property = Object.hasOwn(properties, name) ? properties[name] : undefined;
    if (!isRecord(property) || !nameable(name)) continue;
    const value = args[name];
    if (breaksType(value, property) || breaksEnum(value, property.enum)) return name;
  }
  return undefined;
}

function trimPath(path: string): string {
  return path.replace(/[.:'"`)\]]+$/, "").replace(/\\/g, "/");
}

function hostOf(value: string): string | undefined {
  const m = /^[a-z][a-z0-9+.-]{0,20}:\/\/(?:[^\s/@]*@)?(\[[^\]]+\]|[^\s/:?#]+)/i.exec(value.trim());
  return m?.[1]?.toLowerCase();
}

/** Whether an argument value holds this path: equal, a suffix of it (relative), or a root of it. */
function holdsPath(value: string, path: string): boolean {
  // `./a`, `../../etc/x`, `~/notes`: the server resolved it against a root (or home) of its own.
  const v = trimPath(value.trim())
    .replace(/^(?:~|\.{1,2})\/(?:\.{1,2}\/)*/, "")
    .replace(/\/+$/, "");
  if (v.length < 2) return false;
  if (v === path) return true;
  if (path.endsWith(v.startsWith("/") ? v : `/${v}`)) return true;
  // The model named a root (a directory, a repository path) the server looked under.
  if (v.includes("/") && path.startsWith(`${v}/`)) return true;
  return v.includes(path);
}

function holdsHost(value: string, host: string): boolean {
  const v = value.trim().toLowerCase();
  if (v === host) return true;
  const fromUrl = hostOf(v);
  if (fromUrl === host) return true;
  return v.includes(host);
}

/**
 * Reads what the failure text shares with the call. Without arguments or schema there is no
 * evidence (`targets: "none"`, no argument): lines and runs that know nothing of the call are
 * judged as before.
 */
export function readCallEvidence(text: string, call: CallFacts | undefined): CallEvidence {
  if (call === undefined) return NO_EVIDENCE;
  if (call.evidence !== undefined) return call.evidence;
  const { args, inputSchema } = call;
  if (args === undefined && inputSchema === undefined) return NO_EVIDENCE;
  const head = text.length > TEXT_LIMIT ? text.slice(0, TEXT_LIMIT) : text;
  const values = args === undefined ? [] : leaves(args);

  let argument: CallEvidence["argument"];
  // A value inside a URL of the text (a path segment, a query parameter) is the route of the
  // request the text reports, not a value it refuses: the text with its URLs blanked is read.
  const outsideUrls = head.replace(URL_TOKEN, (url) => " ".repeat(url.length));
  for (const leaf of values) {
    const value = leaf.value.trim();
    if (distinctive(value) && (outsideUrls.includes(value) || holdsWholeUrl(head, value))) {
      argument = { name: leaf.name, by: "value" };
      break;
    }
  }
  if (argument === undefined) {
    const lowerHead = head.toLowerCase();
    for (const name of schemaProperties(inputSchema)) {
      if (nameable(name) && namesProperty(head, lowerHead, name)) {
        argument = { name, by: "property" };
        break;
      }
    }
  }

  // A call that breaks its own schema is the model's to fix, whatever the text names.
  if (argument === undefined && args !== undefined) {
    const name = breaksSchema(args, inputSchema);
    if (name !== undefined) argument = { name, by: "schema" };
  }

  // Targets are judged against the arguments only: without them, nothing is known to be foreign.
  if (args === undefined)
    return argument === undefined ? NO_EVIDENCE : { argument, targets: "none" };
  const { hosts, failedHosts, paths } = targetsOf(head);
  const own =
    hosts.some((h) => values.some((l) => holdsHost(l.value, h))) ||
    paths.some((p) => values.some((l) => holdsPath(l.value, p)));
  const targets: CallEvidence["targets"] = own
    ? "own"
    : failedHosts > 0 || paths.length > 0
      ? "foreign"
      : "none";
  return argument === undefined ? { targets } : { argument, targets };
}

/** The hosts and paths a text names: a pure function of the text, remembered for recent texts. */
interface TextTargets {
  /** Hosts after a connect or resolve failure, then the hosts of URLs (distinct, lowercase). */
  readonly hosts: readonly string[];
  /** Hosts after a connect or resolve failure only (a URL's host alone is not foreign). */
  readonly failedHosts: number;
  readonly paths: readonly string[];
}

const NO_TARGETS: TextTargets = { hosts: [], failedHosts: 0, paths: [] };

function targetsOf(head: string): TextTargets {
  // A URL's host counts only for the model: a server's own API host is in every text it sends.
  const hosts = new Set<string>();
  for (const m of head.matchAll(HOST_AFTER)) if (m[1] !== undefined) hosts.add(m[1].toLowerCase());
  const failedHosts = hosts.size;
  const urlHosts = new Set<string>();
  for (const m of head.matchAll(URL_HOST)) if (m[1] !== undefined) urlHosts.add(m[1].toLowerCase());
  const paths = new Set<string>();
  // Paths inside URLs are the URL's, not the file system's.
  const withoutUrls = head.replace(URL_TOKEN, " ");
  for (const m of withoutUrls.matchAll(ABSOLUTE_PATH)) paths.add(trimPath(m[0]));
  if (failedHosts === 0 && urlHosts.size === 0 && paths.size === 0) return NO_TARGETS;
  return { hosts: [...hosts, ...urlHosts], failedHosts, paths: [...paths] };
}
