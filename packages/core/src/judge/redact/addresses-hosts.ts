/**
 * Addresses and hosts: URLs (a connection string, credentials, a private host or a network URL's
 * single-label host make the whole URL `[url]`; other URLs lose their query string and fragment,
 * and private addresses in their path), emails (when asked), private IPv4 and IPv6 addresses,
 * internal host names.
 */
import { PRIVATE_IPV6_HINT } from "../redact-hints.ts";
import { EMAIL, HOST, IP, PATH, URL_PLACEHOLDER } from "./placeholders.ts";
import type { LocationKind } from "./rule.ts";
import { splitTrailing } from "./scan.ts";
import { CONNECTION_SCHEMES, hasCredentials, hasScheme } from "./urls-credentials.ts";

const URL_SRC = String.raw`(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}:\/\/[^\s"'\x60<>()\[\]{}|\\^,;]*`;
const EMAIL_SRC = String.raw`(?<![\w.+%-])[\w.+%-]+@[A-Za-z0-9-]+\.[A-Za-z0-9.-]*[A-Za-z0-9]`;
const PRIVATE_IPV4_SRC = String.raw`(?<![\w.])(?:10\.\d{1,3}|127\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01])|192\.168|169\.254)\.\d{1,3}\.\d{1,3}(?!\d|\.\d)`;
const PRIVATE_IPV6_SRC = String.raw`(?<![\w:])(?:::1|f[cd][0-9a-f]{2}:[0-9a-f]{0,4}:[0-9a-f:]{0,36}|fe[89ab][0-9a-f]:[0-9a-f]{0,4}:[0-9a-f:]{0,36})(?![\w:])`;
/**
 * A host under a suffix no public name has: `.internal`, `.local` (and Kubernetes'
 * `.svc.cluster.local`), `.localdomain`, `.corp`, `.lan`, `.intranet`, `.home.arpa`, Consul's
 * `.consul`, `.private`, and a Kubernetes service's `<name>.<namespace>.svc` (two labels before
 * `.svc` at least: `Service1.svc` is a WCF endpoint's file).
 */
const INTERNAL_HOST_SRC = String.raw`(?<![\w.-])[A-Za-z0-9][A-Za-z0-9.-]{0,250}?\.(?:internal|local|localdomain|corp|lan|intranet|home\.arpa|consul|private|[A-Za-z0-9-]{1,63}\.svc)(?![\w-]|\.[\w-])`;

const PRIVATE_IPV4 = new RegExp(`^${PRIVATE_IPV4_SRC}$`);
const PRIVATE_IPV6 = new RegExp(`^${PRIVATE_IPV6_SRC}$`, "i");
const INTERNAL_HOST = new RegExp(`^${INTERNAL_HOST_SRC}$`, "i");
const IN_URL_PATH = new RegExp(
  `(${PRIVATE_IPV4_SRC})|(${PRIVATE_IPV6_SRC})|(${INTERNAL_HOST_SRC})`,
  "gi",
);
/** @internal For the linear-time checks in the tests. */
export const IN_URL_PATH_WITH_EMAILS = new RegExp(
  `(${PRIVATE_IPV4_SRC})|(${PRIVATE_IPV6_SRC})|(${INTERNAL_HOST_SRC})|(${EMAIL_SRC})`,
  "gi",
);

function isPrivateHost(host: string): boolean {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  return PRIVATE_IPV4.test(bare) || PRIVATE_IPV6.test(bare) || INTERNAL_HOST.test(bare);
}

/** The schemes of a network service, whose host is a name to resolve (not `s3://bucket`). */
const NETWORK_SCHEMES = new Set(["http", "https", "ws", "wss", "grpc", "grpcs", "tcp"]);
/** A host name of one label, no dot (not an IP: those are read as addresses). */
const SINGLE_LABEL_HOST = /^[a-z][a-z0-9-]{0,62}$/;

/**
 * A network URL's host of a single label (`http://notes-api:8080/…`, a container's or a cluster
 * service's short name): no public host has one (dotless names do not resolve on the Internet),
 * so it names the server's own network. `localhost` stays: it names no one's topology.
 */
function isClusterShortName(scheme: string, host: string): boolean {
  return NETWORK_SCHEMES.has(scheme) && host !== "localhost" && SINGLE_LABEL_HOST.test(host);
}

function hostOfAuthority(authority: string): string {
  if (authority.startsWith("[")) {
    const close = authority.indexOf("]");
    return close < 0 ? authority : authority.slice(0, close + 1);
  }
  const colon = authority.lastIndexOf(":");
  return colon < 0 ? authority : authority.slice(0, colon);
}

function redactUrl(url: string, emails: boolean): string {
  const [core, trailing] = splitTrailing(url);
  const sep = core.indexOf("://");
  const scheme = core.slice(0, sep).toLowerCase();
  if (CONNECTION_SCHEMES.has(scheme)) return URL_PLACEHOLDER + trailing;
  if (scheme === "file") return PATH + trailing;
  const rest = core.slice(sep + 3);
  const queryAt = rest.search(/[?#]/);
  // Tokens hide in query strings and fragments: cut them.
  const beforeQuery = queryAt < 0 ? rest : rest.slice(0, queryAt);
  if (hasCredentials(beforeQuery)) return URL_PLACEHOLDER + trailing;
  const slash = beforeQuery.indexOf("/");
  const authority = slash < 0 ? beforeQuery : beforeQuery.slice(0, slash);
  const host = hostOfAuthority(authority).toLowerCase();
  if (isPrivateHost(host) || isClusterShortName(scheme, host)) return URL_PLACEHOLDER + trailing;
  const path = slash < 0 ? "" : beforeQuery.slice(slash);
  const cleanPath = path.replace(
    emails ? IN_URL_PATH_WITH_EMAILS : IN_URL_PATH,
    (_m, ip4, ip6, host) =>
      ip4 !== undefined || ip6 !== undefined ? IP : host !== undefined ? HOST : EMAIL,
  );
  return `${core.slice(0, sep)}://${authority}${cleanPath}${trailing}`;
}

/** URLs, the first kind of location: searched apart from the others, from the `://` they need. */
export const URL_LOCATION: LocationKind = { source: URL_SRC, may: hasScheme, replace: redactUrl };
/** URLs alone. */
export const URL_ALONE = new RegExp(URL_SRC, "gi");

export const EMAIL_LOCATION: LocationKind = {
  source: EMAIL_SRC,
  may: (text) => text.includes("@"),
  replace: () => EMAIL,
  onlyWithEmails: true,
};

/** Private IPv4 and IPv6 addresses, then internal host names, as the location pattern reads them. */
export const ADDRESS_KINDS: readonly LocationKind[] = [
  { source: PRIVATE_IPV4_SRC, may: (text) => /\d\.\d/.test(text), replace: () => IP },
  { source: PRIVATE_IPV6_SRC, may: (text) => PRIVATE_IPV6_HINT.test(text), replace: () => IP },
  {
    source: INTERNAL_HOST_SRC,
    may: (text) =>
      /\.(?:internal|local|corp|lan|intranet|home\.arpa|consul|private|svc)/i.test(text),
    replace: () => HOST,
  },
];
