/**
 * Fake credentials the fixture puts in its raw errors, so tests can assert none of them reaches
 * the model. None of them is real; they only have the shapes redaction must catch.
 */
export const DEFAULT_SECRET = `sk-live-${"T3stk1tF4keApiKey".padEnd(24, "0")}`;

/** A GitHub-token-shaped fake (`ghp_` + 36 characters). */
export const FAKE_GITHUB_TOKEN = `ghp_${"T3stk1tF4keGitHubToken".padEnd(36, "0")}`;

/** A JWT-shaped fake bearer token. */
export const FAKE_BEARER_TOKEN =
  "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJ0ZXN0a2l0LWZha2UifQ.dGVzdGtpdC1mYWtlLXNpZ25hdHVyZQ";

/** A connection string with a password in it. */
export const FAKE_CONNECTION_STRING =
  "postgres://notes_admin:hunter2-T3stk1t@db.internal.example:5432/notes";

/** The absolute path named in the crash message (besides the real paths in the stack frames). */
export const FAKE_SOURCE_PATH = "/srv/notes-service/lib/db/pool.js";

/** Every secret `crash_with_stack` embeds, given the server's `secret` option. */
export function fixtureSecrets(secret: string = DEFAULT_SECRET): string[] {
  return [
    secret,
    FAKE_GITHUB_TOKEN,
    FAKE_BEARER_TOKEN,
    FAKE_CONNECTION_STRING,
    "hunter2-T3stk1t",
    FAKE_SOURCE_PATH,
  ];
}

/** The message of the error `crash_with_stack` throws. */
export function crashMessage(secret: string = DEFAULT_SECRET): string {
  return (
    `connect ECONNREFUSED 10.20.0.7:5432 while opening ${FAKE_CONNECTION_STRING} ` +
    `(Authorization: Bearer ${FAKE_BEARER_TOKEN}; GITHUB_TOKEN=${FAKE_GITHUB_TOKEN}; ` +
    `STRIPE_KEY=${secret}) at ${FAKE_SOURCE_PATH}:42:17`
  );
}
