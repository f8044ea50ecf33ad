/**
 * URLs and credentials in transit: connection strings and URLs with credentials (`[url]`), query
 * strings and fragments of other URLs, webhook URLs whose path is the secret, and the headers that
 * carry a credential (`Authorization`, `X-Api-Key`, cookies, `Bearer …`).
 */
import { HEADER_HINT } from "../redact-hints.ts";
import { isInert, REDACTED, TOKEN, URL_PLACEHOLDER } from "./placeholders.ts";
import type { SecretGroup } from "./rule.ts";
import { splitTrailing } from "./scan.ts";

/** Schemes of connection strings: redacted whole, they name hosts, users and databases. */
export const CONNECTION_SCHEMES = new Set([
  "postgres",
  "postgresql",
  "mysql",
  "mysqlx",
  "mariadb",
  "mongodb",
  "mongodb+srv",
  "redis",
  "rediss",
  "amqp",
  "amqps",
  "mssql",
  "sqlserver",
  "clickhouse",
  "cockroachdb",
  "memcached",
  "kafka",
  "nats",
  "ldap",
  "ldaps",
  "smtp",
  "smtps",
  "ftp",
  "sftp",
]);

/** user:pass@host, token@host, or a password with an unencoded `/` (what follows `://`, no query). */
export function hasCredentials(rest: string): boolean {
  const slash = rest.indexOf("/");
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const at = rest.indexOf("@");
  return authority.includes("@") || (at >= 0 && rest.slice(0, at).includes(":"));
}

/**
 * Runs before any other secret rule, so a key-value rule cannot eat half of `user:pwd@host`:
 * connection strings and URLs with credentials become `[url]`; other URLs lose their query
 * string and fragment (tokens hide there).
 */
function screenUrl(match: string, base: unknown, query: unknown): string {
  const url = String(base);
  const sep = url.indexOf("://");
  const [, trailing] = splitTrailing(match);
  if (
    CONNECTION_SCHEMES.has(url.slice(0, sep).toLowerCase()) ||
    hasCredentials(url.slice(sep + 3))
  ) {
    return URL_PLACEHOLDER + trailing;
  }
  return typeof query === "string" ? url + trailing : match;
}

/** A URL's scheme ends at most 31 characters after its start, where `://` follows. */
export const SCHEME_REACH = 31;

/** Every URL and connection string has one. */
export function hasScheme(text: string): boolean {
  return text.includes("://");
}

function redactHeader(match: string, name: unknown, separator: unknown, value: unknown): string {
  if (isInert(value)) return match;
  return `${String(name)}${String(separator)}${TOKEN}`;
}

function redactBearer(match: string, word: unknown, space: unknown, value: unknown): string {
  // "bearer token", "Bearer authentication": a short plain word is prose, not a token.
  if (typeof value === "string" && /^[a-z]{1,15}$/i.test(value)) return match;
  return `${String(word)}${String(space)}${TOKEN}`;
}

/** URLs: screened first, so a key-value rule cannot eat half of `user:pwd@host`. */
export const URL_RULES: SecretGroup = {
  may: hasScheme,
  rules: [
    // A `\uXXXX`, `\xNN` or `\/` escape is part of the URL as written (`user:pa\u0073sword@host`,
    // `?token=abc\u0031def`): stopped at its `\`, the placeholder or the query dropped would leave
    // the password's or the token's tail, which read decoded (redact/escapes.ts) is no longer part
    // of a URL.
    [
      /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/(?:[^\s"'`<>()[\]{}|\\^,;?#]|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\\/)*)([?#](?:[^\s"'`<>()[\]{}|\\^,;]|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\\/)*)?/g,
      screenUrl,
      hasScheme,
      ["://", SCHEME_REACH],
    ],
    // Webhook URLs carry their secret in the path.
    [/(?<![\w.-])https?:\/\/hooks\.slack\.com\/[^\s"'`<>]*/gi, URL_PLACEHOLDER, hasScheme],
    [
      /(?<![\w.-])https?:\/\/(?:[\w-]{1,30}\.)?discord(?:app)?\.com\/api\/webhooks\/[^\s"'`<>]*/gi,
      URL_PLACEHOLDER,
      hasScheme,
    ],
  ],
};

/**
 * What follows the `@` of `user:password@` written without a scheme: Go's MySQL DSN
 * (`@tcp(host:3306)`, `@unix(…)`), or a host, or a bracketed IPv6 address, and a port.
 */
const AT_HOST_PORT_SRC = String.raw`@(?:(?:tcp|tcp6|unix|udp)\(|\[[0-9A-Fa-f:.]+\]:\d|[A-Za-z0-9][A-Za-z0-9.-]*:\d{2,5}(?![\d.]))`;
/** {@link AT_HOST_PORT_SRC}, or Oracle's Easy Connect `@//host:port` or `@//host/` after `user/password`. */
const AT_EASY_CONNECT_SRC = String.raw`@\/\/[A-Za-z0-9][A-Za-z0-9.-]*(?::\d{2,5}|\/)`;
const AT_HOST = new RegExp(`${AT_HOST_PORT_SRC}|${AT_EASY_CONNECT_SRC}`);

/**
 * Connection strings written without their scheme, `user:password@host:port`, Go's MySQL DSN
 * `user:password@tcp(host:port)/db` and Oracle's `user/password@//host:port/service`: the
 * credentials are replaced, the host stays (a private one
 * is read as a location after). The password runs to the last `@` before such a host, `@` and `:`
 * in it included.
 */
export const SCHEMELESS_CREDENTIAL_RULES: SecretGroup = {
  may: (text) => AT_HOST.test(text),
  rules: [
    [
      new RegExp(
        String.raw`(?<![\w.%+~:@/-])[\w.%+~-]{1,64}(?::[^\s/"'\x60()<>]{1,256}(?=${AT_HOST_PORT_SRC})|\/[^\s/@"'\x60()<>]{1,128}(?=${AT_EASY_CONNECT_SRC}))`,
        "g",
      ),
      REDACTED,
      () => true,
    ],
  ],
};

/** Headers whose value is a credential. */
export const HEADER_RULES: SecretGroup = {
  may: (text) => HEADER_HINT.test(text),
  rules: [
    // Headers whose value is a credential; its scheme after a `[` too, as Go prints an
    // http.Header (`map[Authorization:[Bearer …]]`): read as the value, `[Bearer` kept the token.
    [
      /(?<![\w-])((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|x-access-token)(["']?\s*[:=]\s*["']?)(?:\[?(?:bearer|basic|token|digest|negotiate|apikey)\s+)?([^\s"',;()]*[:=]\s*[^\s"',;()]+|[^\s"',;()]+)/gi,
      redactHeader,
      (text) => /authorization|api-key|-auth-token|-access-token/i.test(text),
    ],
    [
      /(?<![\w-])(set-cookie|cookie)(\s*:\s*)[^\r\n]*/gi,
      `$1$2${REDACTED}`,
      (text) => /cookie/i.test(text),
    ],
    [
      /(?<![\w-])(bearer)(\s+)([A-Za-z0-9\-._~+/]+=*)/gi,
      redactBearer,
      (text) => /bearer/i.test(text),
    ],
  ],
};
