// An answer that went through but never reached the model (docs/idempotency.md, "An answer the
// host never got"), kept in the ledger rather than beside it: the write's content entry in the
// index of writes in doubt (doubt.ts) is settled `succeeded` with the answer, so the next identical
// call of the scope, in any run or process that shares the store, is answered with it once instead
// of making the write again. doubt.ts reads it when it claims the entry (`takeSucceeded`: one call takes
// it); ledger.ts replays it.
import { GovernorError } from "../errors.ts";
import { canonicalJson } from "../judge/canonical.ts";
import { resolveEffect } from "../judge/effect.ts";
import type { ClaimResult } from "../store/store.ts";
import { contentHashOf } from "./call-state.ts";
import { CONTENT_ARGS, contentClaimOptions, doubtKeyOf, keptRecord } from "./doubt.ts";
import type { RunState } from "./run-state.ts";
import type { ToolCall } from "./types.ts";

/**
 * Keeps `answer` for the next identical call (see `Run.keepAnswer`): claims the write's content
 * entry, so that an identical write in flight or in doubt keeps it from being taken (nothing is
 * kept then: that write is the repeat), and settles it `succeeded` with the answer. Answers whether
 * it was kept. A store that fails rejects; an answer JSON cannot write frees the entry again.
 */
export async function keepAnswer(
  r: RunState,
  request: ToolCall,
  answer: unknown,
  ttlMs: number,
): Promise<boolean> {
  const { core } = r;
  // Observe-only keeps no ledger; a run without a scope that ended has no identical call to come
  // (its content entries are its instance's).
  if (r.observeOnly || (r.scope === undefined && r.ended !== undefined)) return false;
  const server = request.server ?? "";
  const tool = core.toolPolicy(request.tool, request.server);
  if (resolveEffect(tool.effect, tool.trustAnnotations, request.annotations) !== "mutating") {
    return false;
  }
  // Arguments that are not JSON were never sent: there is no answer to keep.
  let canonical: string;
  try {
    canonical = canonicalJson(request.args ?? {});
  } catch {
    return false;
  }
  const key = doubtKeyOf(contentHashOf(r, server, request.tool, canonical));
  const now = core.now();
  // As the write's own claim of it (doubt.ts): the run instance's when the run has no scope.
  const claim: ClaimResult = await core.store.claim(
    key,
    CONTENT_ARGS,
    contentClaimOptions(r, now, false),
  );
  // An older answer kept there is replaced by this one; a person's settle ended any claim.
  if (claim.status !== "claimed" && claim.status !== "succeeded") return false;
  const claimedAt = claim.status === "claimed" ? (claim.claimedAt ?? now) : undefined;
  try {
    await core.store.settle(key, "succeeded", {
      now,
      result: keptRecord(answer, now + ttlMs, core.newRunId()),
      ...(claimedAt !== undefined && { claimedAt }),
    });
    return true;
  } catch (error) {
    // The entry must not stay claimed: once its lease passed it would refuse every identical
    // write for good, with nobody to settle it.
    if (claimedAt !== undefined) {
      await core.store.settle(key, "failed", { now: core.now(), claimedAt });
    }
    if (GovernorError.isInstance(error)) throw error;
    return false;
  }
}
