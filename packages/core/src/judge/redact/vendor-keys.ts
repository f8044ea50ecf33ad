/**
 * Vendors' key formats, each known by its prefix or shape: OpenAI, Anthropic, Stripe, GitHub,
 * Slack, AWS access key ids, Google, npm, Hugging Face, GitLab, PyPI, JWTs, and the prefixed keys
 * of Groq, Linear, Notion, Shopify, Grafana, Vercel, Docker, Figma, Cloudflare, 1Password,
 * HashiCorp Vault, SendGrid, Databricks, Tailscale, Square and age; and, by their shape, Discord
 * bot tokens, Mailgun keys and the account id of AWS ARNs.
 */
import { VENDOR_PREFIX, VENDOR_TOKEN_HINT } from "../redact-hints.ts";
import { REDACTED, TOKEN } from "./placeholders.ts";
import type { SecretGroup } from "./rule.ts";
import { charTable, hasRun } from "./scan.ts";

/** The characters of a key of {@link VENDOR_KEY}. */
const VENDOR_KEY_CHARS = charTable(
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/=.-",
);
/** Whether the run from `start` to `end` holds the prefix of a key of {@link VENDOR_KEY}. */
function hasVendorPrefix(text: string, start: number, end: number): boolean {
  return VENDOR_PREFIX.test(text.slice(start, end));
}
/**
 * Groq, Linear, Notion, Shopify, Grafana, Vercel, Docker, Figma, Cloudflare, 1Password, HashiCorp
 * Vault, SendGrid, Databricks, Tailscale, Square (`sq0atp-`, `sq0csp-`) and age
 * (`AGE-SECRET-KEY-1`, upper case and digits alone) keys.
 */
const VENDOR_KEY =
  /(?<![\w-])(?:(?:gsk|lin_api|ntn|shppa|shpca|shpat|shpss|glc|glsa|vc[piark]|dckr_pat|figd|cfk|cfut|cfat|ops)_[A-Za-z0-9_+/=-]{16,}|hv[sbr]\.[A-Za-z0-9_-]{16,}|SG\.[\w-]{8,}\.[\w-]{8,}|dapi[a-fA-F0-9]{32}|tskey-[a-z]{2,20}-[A-Za-z0-9_]{4,}-[A-Za-z0-9_]{8,}|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,}|AGE-SECRET-KEY-1[A-Z0-9]{50,})/g;

/** Keys known by their prefix. */
export const VENDOR_TOKEN_RULES: SecretGroup = {
  may: (text) => VENDOR_TOKEN_HINT.test(text),
  rules: [
    // Vendor key formats.
    [/(?<![\w-])sk-[A-Za-z0-9_-]{16,}/g, TOKEN, (text) => text.includes("sk-")],
    [
      /(?<![\w-])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}/g,
      TOKEN,
      (text) => /_(?:live|test)_/.test(text),
    ],
    [/(?<![\w-])whsec_[A-Za-z0-9+/=]{16,}/g, TOKEN, (text) => text.includes("whsec_")],
    // Classic tokens (36 characters, `_` among them), and GitHub App installation tokens,
    // `ghs_<id>_<jwt>`.
    [
      /(?<![\w-])(?:gh[pousr]_(?:[A-Za-z0-9_]{36}(?![A-Za-z0-9_])|[A-Za-z0-9]{20,})|ghs_\d{1,20}_[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_.-]{8,})/g,
      TOKEN,
      (text) => /gh[pousr]_/.test(text),
    ],
    [/(?<![\w-])github_pat_[A-Za-z0-9_]{20,}/g, TOKEN, (text) => text.includes("github_pat_")],
    [
      /(?<![\w-])(?:xox[abprseco]|xapp)-[A-Za-z0-9-]{8,}/g,
      TOKEN,
      (text) => /xox[abprseco]-|xapp-/.test(text),
    ],
    [
      /(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])/g,
      TOKEN,
      (text) => /A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA|3T)/.test(text),
    ],
    [/(?<![\w-])AIza[A-Za-z0-9_-]{30,}/g, TOKEN, (text) => text.includes("AIza")],
    [
      /(?<![\w-])(?:npm|hf|glpat|pypi)[_-][A-Za-z0-9_-]{20,}/g,
      TOKEN,
      (text) => /(?:npm|hf|glpat|pypi)[_-]/.test(text),
    ],
    // JWT: header.payload.signature, base64url, header starting `{"`; or a body and its
    // signature alone (Mapbox's `sk.eyJ….<signature>`, whose signature stayed).
    [
      /(?<![\w-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?/g,
      TOKEN,
      (text) => text.includes("eyJ"),
    ],
    // Base64 of a JSON object (`{"` is `eyJ`) too short for a key's shape: a body or a token
    // that carries its claims, `{"pw":"x1"}` among them.
    [/(?<![\w+/.-])eyJ[A-Za-z0-9+/_-]{6,}={0,2}/g, TOKEN, (text) => text.includes("eyJ")],
  ],
};

/** The other vendors' prefixed keys. */
export const VENDOR_PREFIX_RULES: SecretGroup = {
  // Every key of these formats is a run of 20 characters or more of `[A-Za-z0-9_+/=.-]` that
  // holds its prefix. Most texts hold no prefix at all: that is read first.
  may: (text) => VENDOR_PREFIX.test(text) && hasRun(text, VENDOR_KEY_CHARS, 20, hasVendorPrefix),
  rules: [
    // Other vendors' formats (Groq, Linear, Notion, Shopify, Grafana, Vercel, Docker, Figma,
    // Cloudflare, 1Password, HashiCorp Vault, SendGrid, Databricks, Tailscale, Square, age).
    [VENDOR_KEY, TOKEN, () => true],
  ],
};

/**
 * A Discord bot token: the base64 of the bot's user id (`M`, `N` or `O` and 23 to 27 more), a dot,
 * a timestamp of 6 or 7, a dot, an HMAC of 27 to 38. No prefix names it: three runs of exactly
 * these lengths do, which neither words nor a dotted name (`a.b.c`) nor a version have.
 */
const DISCORD_BOT_TOKEN =
  /(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,38}(?![\w.-])/g;

/**
 * A Mailgun private API key, `key-` and 32 lowercase letters and digits (a digit among them):
 * too short for the rule of long keys, and lowercase, which that rule does not read as a token.
 */
const MAILGUN_KEY = /(?<![\w-])key-(?=[a-z]{0,31}\d)[a-z0-9]{32}(?![\w-])/g;

/**
 * An AWS ARN's account id (`arn:aws:iam::123456789012:user/deploy`): the 12 digits that name the
 * account go, the partition, service, region and resource stay (they tell the model which
 * permission failed).
 */
const AWS_ARN_ACCOUNT =
  /(?<![\w-])(arn:aws[a-z-]{0,16}:[a-z0-9-]{1,64}:[a-z0-9-]{0,32}:)\d{12}(?=:)/g;

/** Keys and ids known by their shape where no prefix of the groups above names them. */
export const VENDOR_SHAPE_RULES: SecretGroup = {
  may: (text) => text.includes(".") || text.includes("key-") || text.includes("arn:"),
  rules: [
    [DISCORD_BOT_TOKEN, TOKEN, (text) => text.includes(".")],
    [MAILGUN_KEY, TOKEN, (text) => text.includes("key-")],
    [AWS_ARN_ACCOUNT, `$1${REDACTED}`, (text) => text.includes("arn:aws")],
  ],
};
