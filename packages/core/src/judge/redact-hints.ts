/**
 * Tests the redactor runs before its patterns, each true exactly when an alternation of words
 * matches somewhere in the text. A search for an alternation tries every place where one of the
 * words' first letters is, and letters are everywhere; these find each word from a rarer character
 * of it (a `_`, `-`, `.`, `:`, `z`, `k`, `J`) and read back or on from there, in 40-70 % of the
 * time. redact-hints.test.ts checks each against the alternation it replaces.
 * @internal Not part of the public API.
 */

/**
 * The prefixes of the vendor key formats of redact.ts's `VENDOR_KEY`: `gsk_` … `ops_`, `hvs.`,
 * `SG.`, `dapi`, `tskey-`, `sq0atp-`, `sq0csp-`, `AGE-SECRET-KEY-`, found from their `_`, `.`,
 * `p` and `-`.
 */
export const VENDOR_PREFIX =
  /_(?<=(?:gsk|lin_api|ntn|shppa|shpca|shpat|shpss|glc|glsa|vc[piark]|dckr_pat|figd|cfk|cfut|cfat|ops)_)|\.(?<=hv[sbr]\.|SG\.)|p(?<=dap)i|-(?<=tskey-|sq0atp-|sq0csp-|AGE-SECRET-KEY-)/;

/**
 * What every vendor key of the redactor's third group of secret rules holds: `sk-`, `_live_`,
 * `_test_`, `whsec_`, `ghp_`, `github_pat_`, `xoxb-`, `xapp-`, `npm_`, `AKIA`, `AIza`, `eyJ`, …,
 * found from the `-` or `_` they end in, or the `A` or `J` of the others.
 */
export const VENDOR_TOKEN_HINT =
  /[-_](?<=(?:sk|xox[abprseco]|xapp)-|(?:_(?:live|test)|whsec|gh[pousr]|github_pat)_|(?:npm|hf|glpat|pypi)[_-])|A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA|SCA|3T|Iza)|J(?<=eyJ)/;

/**
 * What every credential header of the redactor's second group of secret rules holds, in either
 * case: `authorization`, `api-key`, `-auth-token`, `-access-token`, `cookie` or `bearer`, found
 * from their `z`, `-`, `k` and `b`.
 */
export const HEADER_HINT =
  /[zk](?:(?<=authoriz)ation|(?<=cook)ie)|-(?:(?<=api-)key|a(?:uth|ccess)-token)|b(?=earer)/i;

/**
 * What every private IPv6 address holds, in either case: `::1`, or `fc`, `fd` or `fe` and two hex
 * digits before a `:`, found from a `:`.
 */
export const PRIVATE_IPV6_HINT = /:(?::1|(?<=f[c-e][0-9a-f]{2}:))/i;
