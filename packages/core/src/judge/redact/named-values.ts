/**
 * Values named as credentials: `password: …`, `"client_secret": "…"`, `DB_PASS=…`,
 * `AccountKey=…`, `STRIPE_WEBHOOK=<token>`, YAML's `password: |` and the line after, on command
 * lines `--password …`, `curl -u user:pw`, `mysql -pS3cret`, `sshpass -p …`, in .netrc
 * `login u password …`, in XML `<password>…</password>`, in Ruby and PHP hashes `'password' => …`,
 * in .NET `<add key="DbPassword" value="…"/>`, in PostgreSQL's `Key (api_token)=(…)`, in other
 * languages `Passwort: …` (and `password： …` with a full-width colon), and in prose "the password
 * is hunter2" (or "das Passwort lautet …", "le mot de passe est …", "密码是…"). The name stays; the value becomes `[redacted]`.
 */
import { isInert, REDACTED } from "./placeholders.ts";
import type { SecretGroup } from "./rule.ts";
import { charTable, isAsciiLetter, isWhitespace, isWordCode } from "./scan.ts";

/** Words a `token: …` style message carries that are a status, not a secret. */
const STATUS_WORDS =
  /^(?:expired|invalid|missing|required|revoked|malformed|empty|none|null|undefined|not|is|was|has|must|should|cannot|denied|rejected|unknown|bad|wrong|incorrect|too|mismatch|unset|present)$/i;

function redactKeyValue(match: string, key: unknown, separator: unknown, value: unknown): string {
  if (typeof value !== "string" || isInert(value)) return match;
  // "token: expired", "token: invalid: expected 32 characters"
  const head = /^([A-Za-z]+)(?::\s|$)/.exec(value)?.[1];
  if (head !== undefined && STATUS_WORDS.test(head)) return match;
  // Keep the quotes, so text glued after a quoted value is not read as part of it next time.
  const opening = value.startsWith('"') || value.startsWith("'") ? value.charAt(0) : "";
  const last = value.charAt(value.length - 1);
  const closing = value.length > 1 && (last === '"' || last === "'") ? last : "";
  return `${String(key)}${String(separator)}${opening}${REDACTED}${closing}`;
}

/** What ends every key of a key-value credential (a session id ends in `id`), lowercase. */
const CREDENTIAL_KEY_ENDS = [
  "key",
  "secret",
  "token",
  "password",
  "passwd",
  "pwd",
  "passphrase",
  "credential",
  "credentials",
  "id",
  "signature",
  "sig",
];

/**
 * Whether a word of {@link CREDENTIAL_KEY_ENDS}, a quote at most and whitespace come before a `:`
 * or `=`, in either case of ASCII letters: from each `:` and `=` back. The same answer as the
 * pattern `/(?:key|secret|…|sig)["']?\s*[:=]/i` (prefilter.test.ts).
 * @internal Exported for tests; not part of the public API.
 */
export function hasCredentialKey(text: string): boolean {
  for (let at = text.indexOf(":"); at >= 0; at = text.indexOf(":", at + 1)) {
    if (credentialKeyBefore(text, at)) return true;
  }
  for (let at = text.indexOf("="); at >= 0; at = text.indexOf("=", at + 1)) {
    if (credentialKeyBefore(text, at)) return true;
  }
  return false;
}

function credentialKeyBefore(text: string, separator: number): boolean {
  let end = separator;
  while (end > 0 && isWhitespace(text.charCodeAt(end - 1))) end--;
  const quote = text.charCodeAt(end - 1);
  if (quote === 34 || quote === 39) end--;
  for (const word of CREDENTIAL_KEY_ENDS) {
    const start = end - word.length;
    if (start < 0) continue;
    let i = 0;
    // `| 0x20` folds an ASCII capital to its small letter and keeps every other code off a-z.
    while (i < word.length && (text.charCodeAt(start + i) | 0x20) === word.charCodeAt(i)) i++;
    if (i === word.length) return true;
  }
  return false;
}

/** The value of a key-value credential: quoted, a value that swallowed the next `key:`, or plain. */
// A quoted value runs over the quotes it escapes (`"hunter\"2"`): ended at the escaped one, its
// tail would stay. It starts after the line breaks and spaces that follow its quote (two text
// blocks `password: "` and `hunter2"` are read one a line): ended at the break, it would be empty.
// A quoted value a line break splits (`"hunter2` and `secret"`, a value wrapped where a terminal or
// a log cut the line) runs on to its closing quote on the next line; unclosed there, it ends at the
// break, so a quote left open never takes the next line of the text with it.
// A YAML block scalar (`password: |`, `token: >-`) has its value on the next, indented line.
const KEY_VALUE_SRC = String.raw`[|>][-+]?[1-9]?[ \t]*\r?\n[ \t]+[^\r\n]*|"\s{0,16}(?:[^"\\\r\n]|\\[^\r\n])*(?:"|\r?\n[ \t]*(?:[^"\\\r\n]|\\[^\r\n])*")?|'\s{0,16}(?:[^'\\\r\n]|\\[^\r\n])*(?:'|\r?\n[ \t]*(?:[^'\\\r\n]|\\[^\r\n])*')?|[^\s"'<>]*[:=]\s*(?:"(?:[^"\\\r\n]|\\[^\r\n])*"?|'(?:[^'\\\r\n]|\\[^\r\n])*'?|[^\s"'<>]+)|[^\s"'<>]+`;
/** {@link KEY_VALUE_SRC} read where the value starts (after the separator and its spaces). */
const KEY_VALUE_AT = new RegExp(KEY_VALUE_SRC, "y");

/** Words that make a name a credential's (`DB_PASS`, `MYSQL_PWD`, `userPassword`). */
const STRONG_NAME_WORDS = new Set([
  "pass",
  "passwd",
  "password",
  "passphrase",
  "pwd",
  "pw",
  "secret",
  "secrets",
  "token",
  "cred",
  "creds",
  "credential",
  "credentials",
  "apikey",
  "privatekey",
]);
/** Strong words glued to a prefix: `PGPASSWORD`, `clientsecret`, `accesstoken`. */
const STRONG_NAME_END = /(?:password|passwd|passphrase|secret|token|apikey|credentials?)$/;
/**
 * Words that make a name a credential's when its value looks like a token: `AccountKey`,
 * `SharedAccessKey`, `SERVICE_KEY_B`, but not `sort_key=name` or `auth=none`.
 */
const WEAK_NAME_WORDS = new Set([
  "key",
  "keys",
  "auth",
  "sig",
  "signature",
  "session",
  "sid",
  "salt",
  "private",
  "cookie",
  "jwt",
  "bearer",
  "otp",
  "pin",
  "sas",
]);

/** Something every strong or weak word holds: most names are told apart by this alone. */
const CREDENTIAL_STEM =
  /pass|pw|secret|token|cred|key|auth|sig|session|sid|salt|private|cookie|jwt|bearer|otp|pin|sas/i;

/** How a name marks its value: any value, a token-shaped value, or nothing. */
type NameKind = "any" | "tokenish" | undefined;

/**
 * Words of a name, lowercased: `DB_PASS` → db, pass; `AccountKey` → account, key (a flag's
 * words are split at `-` and `_` only: `-pS3cret` is a password glued to `-p`, not words).
 */
function nameWords(name: string, camel: boolean): string[] {
  const split = camel
    ? name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    : name;
  return split
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((word) => word !== "");
}

/**
 * Whether a name marks a credential. A strong word last (`DB_PASS`, `PGPASSWORD`, `TOKEN_2`: a
 * trailing number or letter does not count) marks any value; a strong word elsewhere
 * (`MY_APP_CREDENTIAL_X`, but also `token_count`) or a weak word (`AccountKey`) only a value that
 * looks like a token, so `token_count=5` and `sort_key=name` stay.
 */
function credentialName(name: string, camel = true): NameKind {
  if (!CREDENTIAL_STEM.test(name)) return undefined;
  const words = nameWords(name, camel);
  let last = words.length - 1;
  while (last > 0 && /^(?:\d+|[a-z])$/.test(words[last] ?? "")) last--;
  let kind: NameKind;
  for (const [i, word] of words.entries()) {
    const strong = STRONG_NAME_WORDS.has(word) || STRONG_NAME_END.test(word);
    if (strong && i === last) return "any";
    if (strong || WEAK_NAME_WORDS.has(word)) kind = "tokenish";
  }
  return kind;
}

/** The characters of a token-shaped value. */
const TOKEN_CHARS = charTable(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_.~-",
);

/** How far {@link looksLikeToken} reads: enough to tell a token from a word, and bounded. */
const TOKEN_PROBE = 64;

/**
 * Whether the text at `from` starts with a token: `minLength` token characters or more, with
 * letters and digits among the first 64 (`hunter22`, a base64 key), not a word or a number
 * (`created_at`, `5`). An opening quote is skipped.
 */
function looksLikeToken(text: string, from: number, minLength: number): boolean {
  const start = text[from] === '"' || text[from] === "'" ? from + 1 : from;
  const limit = Math.min(text.length, start + TOKEN_PROBE);
  let letters = 0;
  let digits = 0;
  let end = start;
  for (; end < limit; end++) {
    const c = text.charCodeAt(end);
    if (c >= 128 || TOKEN_CHARS[c] !== 1) break;
    if (c >= 48 && c <= 57) digits++;
    else if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122)) letters++;
  }
  return end - start >= minLength && letters >= 2 && digits >= 1;
}

/** An environment variable's name: `STRIPE_WEBHOOK`, `X1`. */
const ENV_NAME = /^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$/;
/** A token-shaped value after an environment variable's name: long enough to be a key. */
const ENV_TOKEN_LENGTH = 16;
/** A token-shaped value after a weakly named key (`AccountKey`): long enough not to be a word. */
const WEAK_TOKEN_LENGTH = 8;

function isNameChar(code: number): boolean {
  return (
    (code >= 48 && code <= 57) ||
    (code >= 65 && code <= 90) ||
    (code >= 97 && code <= 122) ||
    code === 95 ||
    code === 45 ||
    code === 46
  );
}

const MAX_NAME_LENGTH = 64;

/**
 * The name before a separator at `at`: spaces, an optional quote, then up to 64 characters of
 * `[\w.-]` that nothing of that class precedes. Undefined when there is none.
 */
function nameBefore(
  text: string,
  at: number,
): { start: number; end: number; name: string } | undefined {
  let end = at;
  while (end > 0 && at - end < 8 && (text[end - 1] === " " || text[end - 1] === "\t")) end--;
  if (end > 0 && (text[end - 1] === '"' || text[end - 1] === "'")) end--;
  let start = end;
  while (start > 0 && end - start <= MAX_NAME_LENGTH && isNameChar(text.charCodeAt(start - 1))) {
    start--;
  }
  if (start === end || end - start > MAX_NAME_LENGTH) return undefined;
  const name = text.slice(start, end);
  if (!/[A-Za-z]/.test(name)) return undefined;
  const quoted = start > 0 && (text[start - 1] === '"' || text[start - 1] === "'");
  return { start: quoted ? start - 1 : start, end, name };
}

/**
 * Redacts the value after each `name=` / `name:` whose name marks a credential (see
 * {@link credentialName}), and after each `ENV_NAME=` whose value looks like a token of 16
 * characters or more (`STRIPE_WEBHOOK=whsec…`), whatever the name. Separators are visited in
 * order; a redacted value is skipped whole, a kept one is read again (it may hold `DB_PASS=…`).
 */
function redactNamedValues(text: string): string {
  let out = "";
  let copied = 0;
  const separators = new Separators(text);
  for (let at = separators.next(0); at >= 0; at = separators.next(at + 1)) {
    const c = text.charCodeAt(at);
    const named = nameBefore(text, at);
    if (named === undefined || named.start < copied) continue;
    const { name } = named;
    const kind = credentialName(name);
    // `NAME=value`, the name glued to `=`: an environment variable.
    const env = kind === undefined && c === 61 && named.end === at && ENV_NAME.test(name);
    if (kind === undefined && !env) continue;
    let valueAt = at + 1;
    while (valueAt < text.length && isWhitespace(text.charCodeAt(valueAt))) valueAt++;
    // Bounded: a value kept here is read again from its next separator.
    if (env && !looksLikeToken(text, valueAt, ENV_TOKEN_LENGTH)) continue;
    if (kind === "tokenish" && !looksLikeToken(text, valueAt, WEAK_TOKEN_LENGTH)) continue;
    KEY_VALUE_AT.lastIndex = valueAt;
    const value = KEY_VALUE_AT.exec(text)?.[0];
    if (value === undefined) continue;
    const key = text.slice(named.start, at);
    const separator = text.slice(at, valueAt);
    const whole = key + separator + value;
    const replaced = redactKeyValue(whole, key, separator, value);
    if (replaced === whole) continue;
    out += text.slice(copied, named.start) + replaced;
    copied = valueAt + value.length;
    at = copied - 1;
  }
  return copied === 0 ? text : out + text.slice(copied);
}

/**
 * The `=` and `:` of a text in order, each found once: the next of each kind is kept until passed
 * (searching again for a kind the text lacks would read the rest of the text every time).
 */
class Separators {
  private eq = -2;
  private colon = -2;
  constructor(private readonly text: string) {}

  /** The first `=` or `:` at `from` or after, or -1. */
  next(from: number): number {
    if (this.eq !== -1 && this.eq < from) this.eq = this.text.indexOf("=", from);
    if (this.colon !== -1 && this.colon < from) this.colon = this.text.indexOf(":", from);
    if (this.eq < 0) return this.colon;
    return this.colon < 0 || this.eq < this.colon ? this.eq : this.colon;
  }
}

/**
 * Whether a command-line flag may be there: a `-` that no word character or `-` comes before, then a
 * letter, or `-` and a letter; where every match of the flag rule starts. Most error texts hold
 * none (the `-` of an id or a word comes after a letter or digit): one search for `-` instead of
 * the rule's pattern, half the time (prefilter.test.ts checks the rule then changes nothing).
 * @internal Exported for tests; not part of the public API.
 */
export function mayHoldFlag(text: string): boolean {
  for (let at = text.indexOf("-"); at >= 0; at = text.indexOf("-", at + 1)) {
    if (at > 0) {
      const before = text.charCodeAt(at - 1);
      if (before === 45 || isWordCode(before)) continue;
    }
    if (at + 1 >= text.length) return false;
    const next = text.charCodeAt(at + 1);
    if (isAsciiLetter(next)) return true;
    if (next === 45 && at + 2 < text.length && isAsciiLetter(text.charCodeAt(at + 2))) return true;
  }
  return false;
}

/** `--password hunter2`, `-token abc`: a flag named as a credential, then its value after spaces. */
function redactFlagValue(match: string, flag: unknown, space: unknown, value: unknown): string {
  if (typeof flag !== "string" || typeof value !== "string") return match;
  const kind = credentialName(flag, false);
  // Prose names a flag too: "pass the --access-token flag", "--password or a key file".
  if (kind === undefined || /^[A-Za-z]{1,12}[.,;:!?)]?$/.test(value)) return match;
  if (kind === "tokenish" && !looksLikeToken(value, 0, WEAK_TOKEN_LENGTH)) return match;
  return redactKeyValue(match, flag, space, value);
}

/** `curl -u user:pw`, `--user "user:pw"`: the password goes, the user stays. */
function redactUserPassword(
  match: string,
  flag: unknown,
  separator: unknown,
  ...groups: unknown[]
): string {
  // Double-quoted, single-quoted, then bare: user and password of the form that matched.
  const form = [0, 2, 4].find((i) => groups[i] !== undefined) ?? 4;
  const user = String(groups[form]);
  const password = String(groups[form + 1]);
  if (isInert(password)) return match;
  const quote = form === 0 ? '"' : form === 2 ? "'" : "";
  const close = quote !== "" && match.endsWith(quote) ? quote : "";
  return `${String(flag)}${String(separator)}${quote}${user}:${REDACTED}${close}`;
}

/** `-pS3cret`: a password glued to `-p`, as the MySQL and MariaDB clients take it. */
const GLUED_PASSWORD = /(?<![\w-])-p([^\s"'<>=-][^\s"'<>]*)/g;

/**
 * `mysql -pS3cret`, `mysqldump -uroot -pS3cret`: in a text that names a MySQL or MariaDB tool,
 * every value glued to `-p` (elsewhere `-p` is often a port: `-p8080`).
 */
function redactGluedPasswords(text: string): string {
  if (!/mysql|mariadb/i.test(text)) return text;
  return text.replace(GLUED_PASSWORD, (match, value: string) =>
    isInert(value) ? match : `-p${REDACTED}`,
  );
}

/** A .netrc entry's password (`machine h login u password p`, `default login u password p`). */
const NETRC_PASSWORD =
  /(?<![\w-])((?:machine\s+[^\s"'<>]{1,253}|default)\s+login\s+[^\s"'<>]{1,128}\s+password\s+)([^\s"'<>]+)/g;
/** The password `sshpass -p` takes, quoted or not. */
const SSHPASS_PASSWORD = /(?<![\w-])(sshpass\s+-p\s*)("[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>]+)/g;

/**
 * The password of `-u <user> -p <password>` (docker login, az login): a `-p` alone is a port as
 * often, a `-p` right after a user is its password. (mysql's `-u root -p prod`, a prompt and a
 * database, loses the database's name: a rare cost.)
 */
const USER_THEN_P_PASSWORD =
  /(?<![\w-])(-u\s+[^\s"'<>-][^\s"'<>]{0,127}\s+-p\s+)("[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>]+)/g;

/** The value after what names it (`head`), replaced; its quotes stay. */
function redactToldAfter(match: string, head: unknown, value: unknown): string {
  if (typeof value !== "string" || isInert(value)) return match;
  const quote = value.charAt(0) === '"' || value.charAt(0) === "'" ? value.charAt(0) : "";
  const close = quote !== "" && value.length > 1 && value.endsWith(quote) ? quote : "";
  return `${String(head)}${quote}${REDACTED}${close}`;
}

/**
 * `<password>hunter2</password>`, `<SecretAccessKey>…</SecretAccessKey>`, `<ns:token a="b">…</ns:token>`:
 * an XML element named as a credential (see {@link credentialName}; a prefix `ns:` aside), whose
 * text, up to 1024 characters with no `<`, is the value.
 */
const XML_ELEMENT = /<([A-Za-z][\w.:-]{0,63})((?:\s[^<>]{0,200})?)>([^<]{1,1024})<\/\1\s*>/g;

function redactXmlElement(
  match: string,
  name: unknown,
  attributes: unknown,
  value: unknown,
): string {
  if (typeof name !== "string" || typeof value !== "string" || isInert(value)) return match;
  const kind = credentialName(name.slice(name.lastIndexOf(":") + 1));
  if (kind === undefined) return match;
  const trimmed = value.trim();
  if (kind === "tokenish" && !looksLikeToken(trimmed, 0, WEAK_TOKEN_LENGTH)) return match;
  if (STATUS_WORDS.test(trimmed)) return match;
  return `<${name}${String(attributes)}>${REDACTED}</${name}>`;
}

/**
 * Credentials told in prose: "the password is hunter2", "your API key is 9f8e7d6c5b4a", "the key is
 * 9f8e7d6c5b4a3210" (the bare noun: {@link redactProseKey}), "the
 * password for alice was 'correct horse'", "token set to abc123", "the password was reset to
 * abc123" (`was` or `has been` before `set`, `reset` or `changed to` is read first: read as the
 * verb, it took `set` for the value), "the PIN is 4829". A quoted
 * value goes unless it starts with a status word; a bare one only when {@link toldValue} says it
 * is one, so "the password is incorrect" and "the token is expired" stay.
 */
const PROSE_CREDENTIAL =
  /(?<![\w-])((?:pass(?:word|phrase|wd|code)|secret(?:[ _-]?key)?|(?:api|access|auth|session|bearer|refresh|private|secret|signing)[ _-]?(?:key|token)|token|credentials?|pin|key)(?:\s+for\s+[^\s"'<>]{1,64})? +(?:(?:has\s+been|was)\s+(?:(?:re)?set|changed)\s+to|set\s+to|is(?:\s+now)?|was|are|were|will\s+be|reads)\s+)("[^"\r\n]{1,200}"|'[^'\r\n]{1,200}'|\x60[^\x60\r\n]{1,200}\x60|[^\s"'<>\x60\\]{1,200})/gi;

/** The length of a prose value without the sentence punctuation after it. */
const TRAILING_PUNCTUATION = /[.,;:!?)]+$/;
const PROSE_TOKEN_LENGTH = 6;

function redactProseCredential(match: string, told: unknown, value: unknown): string {
  if (typeof told !== "string" || typeof value !== "string" || isInert(value)) return match;
  // The verb as {@link mayTellCredential} finds it (the name before it holds no space).
  if (!HAS_PROSE_VERB.test(told)) return match;
  if (/^key\s/i.test(told)) return redactProseKey(match, told, value);
  const quote = value.charAt(0);
  if (quote === '"' || quote === "'" || quote === "\x60") {
    const inner = value.slice(1, -1).trim();
    if (inner === "" || STATUS_WORDS.test(inner.split(/\s/)[0] ?? "")) return match;
    return `${told}${quote}${REDACTED}${quote}`;
  }
  const trailing = TRAILING_PUNCTUATION.exec(value)?.[0] ?? "";
  const bare = value.slice(0, value.length - trailing.length);
  if (!toldValue(bare)) return match;
  return `${told}${REDACTED}${trailing}`;
}

/**
 * "the key is …" under the bare noun (a license key, an encryption key): a key is as often a
 * name ("the partition key is region", "the key is user_id", an object's `notes/a.md`), so the
 * value, quoted or bare, goes only when it is shaped as a secret ({@link keyShaped}).
 */
function redactProseKey(match: string, told: string, value: string): string {
  const quote = value.charAt(0);
  if (quote === '"' || quote === "'" || quote === "\x60") {
    return keyShaped(value.slice(1, -1).trim()) ? `${told}${quote}${REDACTED}${quote}` : match;
  }
  const trailing = TRAILING_PUNCTUATION.exec(value)?.[0] ?? "";
  const bare = value.slice(0, value.length - trailing.length);
  return keyShaped(bare) ? `${told}${REDACTED}${trailing}` : match;
}

/**
 * A key's value shaped as a secret: 12 hex digits or more with a letter and a digit (dashes
 * between groups, a UUID, allowed), or 16 characters or more of a token's alphabet with an upper
 * and a lower case letter and a digit.
 */
function keyShaped(value: string): boolean {
  if (/^[0-9a-f]+(?:-[0-9a-f]+)*$/i.test(value)) {
    const hex = value.replaceAll("-", "");
    return hex.length >= 12 && /\d/.test(hex) && /[a-f]/i.test(hex);
  }
  return (
    /^[A-Za-z0-9+/=_-]{16,}$/.test(value) &&
    /[A-Z]/.test(value) &&
    /[a-z]/.test(value) &&
    /\d/.test(value)
  );
}

/**
 * A bare value told as a credential: 6 characters or more with a letter and a digit
 * (`hunter2xyz`, `admin:admin123`), or 4 digits or more alone (a PIN), not a word or a count.
 */
function toldValue(value: string): boolean {
  if (/^\d{4,}$/.test(value)) return true;
  return value.length >= PROSE_TOKEN_LENGTH && /[A-Za-z]/.test(value) && /\d/.test(value);
}

/**
 * A verb of {@link PROSE_CREDENTIAL}'s sentences as the rule takes it: in lower case, one space
 * before it, whitespace after (the rule leaves "PASSWORD IS x" and "password\tis x" alone).
 */
const PROSE_VERB_SRC = " (?:is|was|are|were|set|will|reads|has)\\s";
const PROSE_VERB = new RegExp(PROSE_VERB_SRC, "g");
const HAS_PROSE_VERB = new RegExp(PROSE_VERB_SRC);
/** The nouns it reads, lowercase, as the word before the verb (or before `for <name>`) ends. */
const PROSE_NOUNS = [
  "word",
  "phrase",
  "passwd",
  "code",
  "secret",
  "key",
  "token",
  "credential",
  "credentials",
  "pin",
];

/** The last letters of {@link PROSE_NOUNS}, lowercase. */
const NOUN_ENDS = charTable("detylns");

/**
 * Whether a credential may be told in prose: a verb of {@link PROSE_CREDENTIAL} after a word that
 * ends in one of its nouns, or after `<noun> for <name>`. Most texts have no verb after such a
 * word: one search for the verbs, a look at the word before each, and the rule's pattern is not run.
 * @internal Exported for tests; not part of the public API.
 */
export function mayTellCredential(text: string): boolean {
  PROSE_VERB.lastIndex = 0;
  let found = false;
  // `test`, not `exec`: no match array per verb. A match ends after the whitespace that follows
  // its verb; the space before the verb is found back over the verb's letters.
  while (!found && PROSE_VERB.test(text)) {
    let space = PROSE_VERB.lastIndex - 2;
    while (text.charCodeAt(space) !== 32) space--;
    PROSE_VERB.lastIndex = space + 1;
    const word = wordBefore(text, space);
    if (endsInNoun(text, word)) found = true;
    // "<noun> for <name> is": the word before `for`.
    else {
      const forWord = wordBefore(text, word);
      found =
        forWord >= 0 &&
        word - forWord >= 4 &&
        /^for\s$/i.test(text.slice(forWord, forWord + 4)) &&
        endsInNoun(text, wordBefore(text, forWord));
    }
  }
  PROSE_VERB.lastIndex = 0;
  return found;
}

/**
 * Where the word before `end` starts (whitespace before `end` skipped; a word is what is not
 * whitespace, its last 65 characters at most); -1 when there is none.
 */
function wordBefore(text: string, end: number): number {
  let stop = end;
  while (stop > 0 && isWhitespace(text.charCodeAt(stop - 1))) stop--;
  let start = stop;
  while (start > 0 && !isWhitespace(text.charCodeAt(start - 1)) && stop - start <= 64) start--;
  return start === stop ? -1 : start;
}

/** Whether the word at `start` (to the next whitespace) ends in a noun of {@link PROSE_NOUNS}. */
function endsInNoun(text: string, start: number): boolean {
  if (start < 0) return false;
  let end = start;
  while (end < text.length && !isWhitespace(text.charCodeAt(end))) end++;
  // Every noun ends in one of these letters: most words are told apart by their last.
  if (NOUN_ENDS[text.charCodeAt(end - 1) | 0x20] !== 1) return false;
  for (const noun of PROSE_NOUNS) {
    const from = end - noun.length;
    if (from < start) continue;
    let i = 0;
    while (i < noun.length && (text.charCodeAt(from + i) | 0x20) === noun.charCodeAt(i)) i++;
    if (i === noun.length) return true;
  }
  return false;
}

/**
 * A password named in another language (`Passwort:`, `contraseña:`, `пароль:`, `mot de passe:`,
 * `密码：`…), or in English before a full-width colon or equals sign (`password：`), as localised
 * servers and CJK input write them: the rule of key-value credentials reads English names and
 * ASCII separators only. The value, quoted or up to the next space or JSON-escaped break (`\n`,
 * `\r`, `\t`, not an escaped backslash before an `n`: what follows a break, the next line's name
 * and value, is read apart; a value on the line after its name, behind one break, goes with it),
 * goes unless it is a status word.
 */
const LOCALISED_PASSWORD =
  /(?<![\p{L}\p{N}_-])((?:(?:passwor[dt]|passwd|pwd|passphrase|secret|token|api[_-]?key)["']?\s{0,4}[：＝]|(?:passwort|kennwort|contrase[ñn]a|senha|palavra[ -]passe|mot\s{1,4}de\s{1,4}passe|wachtwoord|passord|lösenord|adgangskode|salasana|jelszó|hasło|heslo|ş[iİı]fre|пароль|гасло|κωδικ[οό]ς|密码|密碼|口令|パスワード|비밀번호|암호)["']?\s{0,4}[:：=＝])\s{0,4})("[^"\r\n]{0,200}"?|'[^'\r\n]{0,200}'?|(?:\\[nrt])?(?:\\\\|(?!\\[nrt])[^\s"'<>]){1,200})/giu;

/** What follows every localised password's name: a colon or equals sign, ASCII or full-width. */
const LOCALISED_SEPARATOR = /[:=：＝]/;

/** The value after a localised password's name, unless a status word or a placeholder. */
function redactLocalisedPassword(match: string, head: unknown, value: unknown): string {
  if (typeof value !== "string" || isInert(value)) return match;
  const bare = value.replace(/^["']|["']$/g, "");
  if (bare === "" || STATUS_WORDS.test(bare.split(/[\s:]/)[0] ?? "")) return match;
  return redactToldAfter(match, head, value);
}

/**
 * A password told in a sentence in another language, as localised servers write it: "Das
 * Passwort lautet Geheim123", "le mot de passe est …", "la contraseña es …", "a senha é …", "la
 * password è …", "het wachtwoord is …", "hasło to …", "пароль — …", "密码是…", "パスワードは…",
 * "비밀번호는 …". The value is read as in English prose ({@link redactProseCredential}): quoted,
 * unless a status word; bare, only when {@link toldValue} says it is one ("le mot de passe est
 * incorrect" stays).
 */
const LOCALISED_PROSE =
  /(?<![\p{L}\p{N}_-])((?:(?:passwort|kennwort)\s{1,4}(?:ist|lautet|lautete|war)|mot\s{1,4}de\s{1,4}passe\s{1,4}(?:est|était|sera)|contrase[ñn]a\s{1,4}(?:es|era|será)|(?:senha|palavra[ -]passe)\s{1,4}(?:é|era|será)|password\s{1,4}(?:è|era|sarà)|wachtwoord\s{1,4}(?:is|was|luidt)|has[łl]o\s{1,4}(?:to|jest|brzmi)|пароль\s{0,4}(?:[—–]|-\s|это\s|был\s|:)|(?:密码|密碼|口令)\s{0,4}(?:是|为|為)|パスワードは|비밀번호(?:는|은))\s{0,4})("[^"\r\n]{1,200}"|'[^'\r\n]{1,200}'|「[^」\r\n]{1,200}」|[^\s"'<>\x60\\。、，,]{1,200})/giu;

/**
 * What every match of {@link LOCALISED_PASSWORD} and of {@link LOCALISED_PROSE} holds: a
 * full-width colon or equals sign, or the start of one of their names or nouns (as they read it,
 * in any case). One test for both rules, and for most texts (which hold none) the only one: the
 * separators alone (`:` or `=`) are in most texts, and the pattern of names ran on each of them.
 */
const LOCALISED_NOUN =
  /[：＝]|passwort|kennwort|contrase|senha|palavra|mot\s{1,4}de|wachtwoord|passord|lösenord|adgangskode|salasana|jelszó|has[łl]o|heslo|ş[iİı]fre|пароль|гасло|κωδικ[οό]ς|密码|密碼|口令|パスワード|비밀번호|암호|password\s{1,4}[èes]/iu;

/** Whether `text` may hold a localised password or prose credential ({@link LOCALISED_NOUN}). */
function mayHoldLocalisedNoun(text: string): boolean {
  return LOCALISED_NOUN.test(text);
}

function redactLocalisedProse(match: string, told: unknown, value: unknown): string {
  if (typeof told !== "string" || typeof value !== "string" || isInert(value)) return match;
  const open = value.charAt(0);
  if (open === '"' || open === "'" || open === "「") {
    const inner = value.slice(1, -1).trim();
    if (inner === "" || STATUS_WORDS.test(inner.split(/\s/)[0] ?? "")) return match;
    return `${told}${open}${REDACTED}${value.charAt(value.length - 1)}`;
  }
  const trailing = TRAILING_PUNCTUATION.exec(value)?.[0] ?? "";
  const bare = value.slice(0, value.length - trailing.length);
  if (!toldValue(bare)) return match;
  return `${told}${REDACTED}${trailing}`;
}

/**
 * A .NET `appSettings` entry or a Spring bean property, `<add key="DbPassword" value="…" />`,
 * `<property name="password" value="…"/>`: the name is an attribute, the value the next one. The
 * value goes when the name marks a credential (see {@link credentialName}).
 */
const NAMED_ATTRIBUTE_VALUE =
  /(<[A-Za-z][\w.:-]{0,40}\s{1,8}(?:key|name)\s{0,4}=\s{0,4}(["'])([^"'<>\r\n]{1,64})\2\s{1,8}value\s{0,4}=\s{0,4})(["'])([^"'<>\r\n]{0,500})\4/gi;

function redactNamedAttribute(
  match: string,
  head: unknown,
  _quote: unknown,
  name: unknown,
  quote: unknown,
  value: unknown,
): string {
  if (typeof name !== "string" || typeof value !== "string" || isInert(value)) return match;
  const kind = credentialName(name);
  if (kind === undefined || value === "") return match;
  if (kind === "tokenish" && !looksLikeToken(value, 0, WEAK_TOKEN_LENGTH)) return match;
  return `${String(head)}${String(quote)}${REDACTED}${String(quote)}`;
}

/**
 * PostgreSQL's unique-violation detail, `Key (api_token)=(…) already exists`: the columns are
 * named, the values follow in parentheses. The values go when a column marks a credential
 * (`Key (email)=(…)` and `Key (id)=(…)` stay: the model may need to know which value is taken).
 */
const PG_KEY_DETAIL = /(?<![\w-])(Key \(([^()\r\n]{1,200})\)=\()([^()\r\n]{1,500})\)/g;

function redactPgKeyDetail(
  match: string,
  head: unknown,
  columns: unknown,
  values: unknown,
): string {
  if (typeof columns !== "string" || typeof values !== "string" || isInert(values)) return match;
  const kinds = columns.split(",").map((column) => credentialName(column.trim().replace(/"/g, "")));
  if (kinds.includes("any") || (kinds.includes("tokenish") && /\d/.test(values))) {
    return `${String(head)}${REDACTED})`;
  }
  return match;
}

/** Credentials named by a key, a flag, a variable, an XML element or a sentence, in this order. */
export const NAMED_VALUE_RULES: SecretGroup = {
  may: () => true,
  rules: [
    // `mysql -pS3cret`: before key=value, whose value can swallow the word that names MySQL
    // (`api_key=x)(mysql -p…`) and with it the reason to read `-p` as a password.
    [GLUED_PASSWORD, { rewrite: redactGluedPasswords }, (text) => text.includes("-p")],
    // key=value / key: value / "key": "value" credentials (aws_secret_access_key, password, …),
    // and Ruby's and PHP's `=>` (`:password=>"…"`, `'password' => '…'`). A value that swallowed
    // the next `key:` (`pw=a)(api_key: b`) takes that key's value too.
    [
      /(?<![\w-])(["']?[\w.-]{0,40}?(?:api[_-]?key|apikey|(?:access|secret|private|signing|encryption|master|client)[_-]?key|client[_-]?secret|secret|token|password|passwd|pwd|passphrase|credentials?|session[_-]?id|sessionid|signature|sig)["']?)(\s*(?:=>|[:=])\s*)([|>][-+]?[1-9]?[ \t]*\r?\n[ \t]+[^\r\n]*|"\s{0,16}(?:[^"\\\r\n]|\\[^\r\n])*(?:"|\r?\n[ \t]*(?:[^"\\\r\n]|\\[^\r\n])*")?|'\s{0,16}(?:[^'\\\r\n]|\\[^\r\n])*(?:'|\r?\n[ \t]*(?:[^'\\\r\n]|\\[^\r\n])*')?|[^\s"'<>]*[:=]\s*(?:"(?:[^"\\\r\n]|\\[^\r\n])*"?|'(?:[^'\\\r\n]|\\[^\r\n])*'?|[^\s"'<>]+)|[^\s"'<>]+)/gi,
      redactKeyValue,
      // The end of every key, then its separator.
      hasCredentialKey,
    ],
    // Command lines: `--password hunter2`, `curl -u user:pw`, `mysql -pS3cret`.
    [
      /(?<![\w-])(--?[A-Za-z][\w-]{0,40})(\s+)("[^"\r\n]*"?|'[^'\r\n]*'?|[^\s"'<>-][^\s"'<>]*)/g,
      redactFlagValue,
      mayHoldFlag,
    ],
    [
      /(?<![\w-])(-u|-U|--user|--proxy-user)(\s+|=)(?:"([^"\r\n:]+):([^"\r\n]*)"?|'([^'\r\n:]+):([^'\r\n]*)'?|([^\s:"'<>]+):([^\s"'<>]+))/g,
      redactUserPassword,
      (text) => text.includes("-u") || text.includes("-U"),
    ],
    // `DB_PASS=…`, `AccountKey=…`, `STRIPE_WEBHOOK=<token>`.
    [
      KEY_VALUE_AT,
      { rewrite: redactNamedValues },
      (text) => text.includes("=") || text.includes(":"),
    ],
    // A .netrc line, `machine <host> login <user> password <value>`: no separator to read.
    [NETRC_PASSWORD, redactToldAfter, (text) => text.includes(" login ")],
    // `sshpass -p <value>`: a password after a flag that elsewhere is a port.
    [SSHPASS_PASSWORD, redactToldAfter, (text) => text.includes("sshpass")],
    // `-u <user> -p <value>`: the password after a user, where `-p` is not a port.
    // (Any space around the flag, a line break or a tab too, as the pattern reads it.)
    [USER_THEN_P_PASSWORD, redactToldAfter, (text) => text.includes("-p")],
    // `<password>…</password>`, `<AccessKey>…</AccessKey>`.
    [XML_ELEMENT, redactXmlElement, (text) => text.includes("</")],
    // `<add key="DbPassword" value="…" />`.
    [NAMED_ATTRIBUTE_VALUE, redactNamedAttribute, (text) => /value\s{0,4}=/i.test(text)],
    // `Key (api_token)=(…) already exists`.
    [PG_KEY_DETAIL, redactPgKeyDetail, (text) => text.includes("Key (")],
    // `Passwort: …`, `contraseña: …`, `password： …`.
    [
      LOCALISED_PASSWORD,
      redactLocalisedPassword,
      (text) => mayHoldLocalisedNoun(text) && LOCALISED_SEPARATOR.test(text),
    ],
    // "the password is hunter2".
    [PROSE_CREDENTIAL, redactProseCredential, mayTellCredential],
    // "Das Passwort lautet Geheim123", "密码是 hunter2".
    [LOCALISED_PROSE, redactLocalisedProse, mayHoldLocalisedNoun],
  ],
};
