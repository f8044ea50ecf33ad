import { createHash } from "node:crypto";

/** A Lua script run with EVALSHA, falling back to EVAL when the server has not cached it. */
export interface Script {
  readonly source: string;
  readonly sha1: string;
}

function script(source: string): Script {
  return { source, sha1: createHash("sha1").update(source).digest("hex") };
}

/**
 * Claims an idempotency key atomically (Redis runs a script alone: no other command interleaves).
 * KEYS: entry hash, unsettled set. ARGV: argsHash, now, allowUncertain ("1"/"0"), leaseMs,
 * maxUnsettled, the key as a set member.
 * Answers { status, argsHash, state, updatedAt, result } (result "" when none) or { "ledger_full" }.
 */
export const CLAIM = script(`
local entry, unsettled = KEYS[1], KEYS[2]
local argsHash, now, allowUncertain = ARGV[1], ARGV[2], ARGV[3] == '1'
local leaseMs, maxUnsettled, member = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local found = redis.call('HMGET', entry, 'argsHash', 'state', 'updatedAt', 'result')
local storedHash, state, updatedAt, result = found[1], found[2], found[3], found[4] or ''

local function take()
  redis.call('DEL', entry)
  redis.call('HSET', entry, 'argsHash', argsHash, 'state', 'pending', 'updatedAt', now)
  redis.call('SADD', unsettled, member)
  return {'claimed', argsHash, 'pending', now, ''}
end
local function full()
  return redis.call('SCARD', unsettled) >= maxUnsettled
end

if not state then
  if full() then return {'ledger_full'} end
  return take()
end
if storedHash ~= '' and storedHash ~= argsHash then
  return {'args_mismatch', storedHash, state, updatedAt, result}
end
if state == 'succeeded' then
  return {'succeeded', storedHash, state, updatedAt, result}
end
if state == 'failed' then
  if full() then return {'ledger_full'} end
  return take()
end
if state == 'pending' then
  if tonumber(now) - tonumber(updatedAt) < leaseMs then
    return {'in_flight', storedHash, state, updatedAt, result}
  end
  if not allowUncertain then
    redis.call('HSET', entry, 'state', 'uncertain', 'updatedAt', now)
    return {'uncertain', storedHash, 'uncertain', now, result}
  end
  return take()
end
if allowUncertain then return take() end
return {'uncertain', storedHash, state, updatedAt, result}
`);

/**
 * Settles a key atomically. KEYS: entry hash, unsettled set. ARGV: state, now, result JSON ("" for
 * none), retentionMs, the key as a set member. Settled entries expire after the retention and
 * leave the unsettled set; uncertain ones join it and never expire.
 */
export const SETTLE = script(`
local entry, unsettled = KEYS[1], KEYS[2]
local state, now, result, retentionMs, member = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local argsHash = redis.call('HGET', entry, 'argsHash') or ''
redis.call('DEL', entry)
redis.call('HSET', entry, 'argsHash', argsHash, 'state', state, 'updatedAt', now)
if result ~= '' then redis.call('HSET', entry, 'result', result) end
if state == 'uncertain' then
  redis.call('SADD', unsettled, member)
else
  redis.call('SREM', unsettled, member)
  redis.call('PEXPIRE', entry, retentionMs)
end
return 1
`);

/**
 * Adds to a counter and gives a new counter its expiry, in one step. KEYS: counter. ARGV: by,
 * ttlMs. "PTTL is -1" is PEXPIRE NX's own condition (no expiry yet), spelled so that Redis 6
 * runs it too.
 */
export const INCREMENT = script(`
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return value
`);
