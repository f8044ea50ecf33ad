/**
 * Vendors' key formats, each known by its prefix or shape: OpenAI, Anthropic, Stripe, GitHub,
 * Slack, AWS access key ids, Google, npm, Hugging Face, GitLab, PyPI, JWTs, and the prefixed keys
 * of Groq, Linear, Notion, Shopify, Grafana, Vercel, Docker, Figma, Cloudflare, 1Password,
 * HashiCorp Vault, SendGrid, Databricks, Tailscale, Square and age.
 */
import { VENDOR_PREFIX, VENDOR_TOKEN_HINT } from "../redact-hints.ts";
import { TOKEN } from "./placeholders.ts";
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
