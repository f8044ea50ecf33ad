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
 * What every ledger script starts with. KEYS: entry hash, result blob, unsettled set, settled
 * sorted set, epoch hash (all of one bucket: one cluster slot). ARGV: the epoch id, sequence
 * number and primary (replication id) this client has seen ("", "0" and "" before its first
 * ledger operation on the bucket), a fresh epoch id (used when the epoch must be created), the
 * entry key prefix and the blob key prefix (for purging expired entries), then the script's own.
 *
 * The epoch detects a ledger that lost data (docs/architecture.md §4): it is created at first use and never
 * expires, and every claim and settle adds 1 to its sequence number. It is missing after a restart
 * without persistence, a flush or an eviction; it is another one when a worker that never saw the
 * old one created it afresh; its number goes back after a failover to a replica that missed
 * writes. Each case, seen by a client that saw the old state, marks the epoch `lost`, and every
 * client then refuses to claim until a person clears the mark (`acknowledgeLedgerLoss`).
 *
 * A number that went back is overtaken by the writes made after a failover, so the epoch also
 * records which primary wrote it: the server's replication id (`master_replid`), which a promoted
 * replica, or a primary restarted, takes afresh. When a script runs on a primary other than the
 * one the epoch last saw, it records where the old primary's history ended here (`end:<replid>`:
 * the number this server holds of it). A client that saw a higher number from that primary saw
 * writes this server never got: lost, whatever was written since.
 *
 * The epoch also remembers that the ledger has had a replica (`replicated`, set whenever the
 * primary has one connected), for `waitForReplicas`'s default: a primary whose replica is down
 * must not answer claims that a failover to that replica would lose, also once it restarted (a
 * restart takes a new replication id and forgets its replicas until they reconnect). Only a
 * promotion clears it: a server whose previous replication id (`master_replid2`) is the primary
 * the epoch last saw is that primary's replica, promoted; until a replica joins it, there is none
 * to fail over to. (A restart from an RDB file, without AOF, also keeps its old id there, and so
 * reads as a promotion: one more reason the store requires AOF.)
 *
 * Every reply of a ledger script starts with the status, the epoch id and number, the primary's
 * replication id and whether the ledger has had a replica ("1" or "0", for `waitForReplicas`'s
 * default).
 */
const PRELUDE = `
local entry, blob, unsettled, settled, epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local knownId, knownSeq, knownPrimary, newId = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local entryPrefix, blobPrefix = ARGV[5], ARGV[6]
local clock = redis.call('TIME')
local serverNow = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local replication = redis.call('INFO', 'replication')
local primary = string.match(replication, 'master_replid:(%w+)') or ''
local replicas = tonumber(string.match(replication, 'connected_slaves:(%d+)') or '0')
local replicated = '0'

local function markLost(reason)
  redis.call('HSET', epoch, 'lost', reason, 'lostFrom', knownId, 'lostAt', serverNow)
  return nil, reason
end

-- Records that this server now writes the epoch; keeps the ends of the last 32 primaries. A
-- promoted replica (its previous id is the primary the epoch saw) has no replica of its own yet.
local function follow(seq)
  local held = redis.call('HGET', epoch, 'primary')
  if held == primary then return end
  if held then
    if string.match(replication, 'master_replid2:(%w+)') == held then
      redis.call('HDEL', epoch, 'replicated')
    end
    redis.call('HSET', epoch, 'end:' .. held, seq)
    local flat = redis.call('HGETALL', epoch)
    local ends = {}
    for i = 1, #flat, 2 do
      if string.sub(flat[i], 1, 4) == 'end:' then ends[#ends + 1] = { flat[i], tonumber(flat[i + 1]) } end
    end
    if #ends > 32 then
      table.sort(ends, function(a, b) return a[2] < b[2] end)
      for i = 1, #ends - 32 do redis.call('HDEL', epoch, ends[i][1]) end
    end
  end
  redis.call('HSET', epoch, 'primary', primary)
end

-- Answers the epoch id and sequence number, or nil and why the ledger is taken for lost.
-- bump: this operation writes to the ledger (claim, settle), so the sequence number advances.
local function guard(bump)
  local id = redis.call('HGET', epoch, 'id')
  if not id then
    local traces = redis.call('EXISTS', unsettled) + redis.call('EXISTS', settled)
    redis.call('HSET', epoch, 'id', newId, 'seq', 0, 'createdAt', serverNow, 'primary', primary)
    if knownId ~= '' then return markLost('missing') end
    if traces > 0 then return markLost('missing') end
    id = newId
  end
  local lost = redis.call('HGET', epoch, 'lost')
  if lost then return nil, lost end
  local current = tonumber(redis.call('HGET', epoch, 'seq'))
  follow(current)
  if redis.call('HEXISTS', epoch, 'replicated') == 1 then
    replicated = '1'
  elseif replicas > 0 then
    redis.call('HSET', epoch, 'replicated', '1')
    replicated = '1'
  end
  local from = knownSeq
  if knownId ~= '' and knownId ~= id then
    if redis.call('HEXISTS', epoch, 'retired:' .. knownId) == 0 then return markLost('replaced') end
    from = 0
  elseif knownPrimary ~= '' and knownPrimary ~= primary then
    -- This client last wrote through another primary: it saw that primary's history up to
    -- knownSeq, and this server holds it up to end:knownPrimary (no end: none of it).
    local ended = tonumber(redis.call('HGET', epoch, 'end:' .. knownPrimary))
    if not ended or knownSeq > ended then return markLost('rolled_back') end
  end
  local seq = current
  if bump then seq = redis.call('HINCRBY', epoch, 'seq', 1) end
  if (bump and seq <= from) or (not bump and seq < from) then return markLost('rolled_back') end
  return id, seq
end

-- Drops a few settled entries whose retention has passed (the rest go on later calls).
local function purge()
  local expired = redis.call('ZRANGEBYSCORE', settled, '-inf', serverNow, 'LIMIT', 0, 16)
  for _, member in ipairs(expired) do
    local key = entryPrefix .. member
    local state = redis.call('HGET', key, 'state')
    local expiresAt = tonumber(redis.call('HGET', key, 'expiresAt'))
    if (state == 'succeeded' or state == 'failed') and expiresAt and expiresAt <= serverNow then
      redis.call('DEL', key, blobPrefix .. member)
    end
    redis.call('ZREM', settled, member)
  end
end

-- The entry's fields, or nil when absent or past its retention (then deleted).
local function read()
  local found = redis.call('HMGET', entry, 'argsHash', 'state', 'updatedAt', 'hasResult', 'leaseMs', 'expiresAt', 'leaseFrom', 'claimedAt', 'heldUntil')
  local state = found[2]
  if not state then return nil end
  local expiresAt = tonumber(found[6])
  if expiresAt and expiresAt < serverNow then
    redis.call('DEL', entry, blob)
    return nil
  end
  local result, unavailable = '', ''
  if found[4] == '1' then
    result = redis.call('GET', blob)
    if not result then result, unavailable = '', '1' end
  end
  return { argsHash = found[1] or '', state = state, updatedAt = found[3] or '0',
    leaseMs = tonumber(found[5]) or 0, leaseFrom = tonumber(found[7]), result = result,
    unavailable = unavailable, claimedAt = found[8] or '', heldUntil = tonumber(found[9]) }
end
`;

/**
 * Claims an idempotency key atomically (Redis runs a script alone: no other command interleaves).
 * ARGV after the prelude's: argsHash, now, allowUncertain ("1"/"0"), leaseMs, maxUnsettled (this
 * bucket's share of the cap), the key as a set member, the claim whose hold this claimer knows
 * ended ("" for none: `ClaimOptions.handedOver`). Answers { status, epochId, seq, primary,
 * replicated, argsHash, state, updatedAt, result, resultUnavailable, retaken, claimedAt } (retaken
 * "1" when a claim took over a write in doubt, else ""; claimedAt the claim's mark on a `claimed`
 * answer, else "") or { "ledger_full", epochId, seq, primary, replicated } or { "ledger_lost",
 * reason }.
 *
 * A lease runs on the server's clock: the entry keeps `leaseFrom` (server time at the claim) and
 * a later claim compares it with server time, so workers whose clocks disagree by minutes cannot
 * take over a key still in flight. `updatedAt` stays the claimer's `now`. Each claim that takes
 * the key marks it (`claimedAt`) by the server's clock too, past the key's claim before (ms, one
 * more when the clock has not moved on or went back), and answers the mark: only a settle naming
 * it frees or marks the key (SETTLE), so which attempt holds a key never depends on a worker's
 * clock.
 */
export const CLAIM = script(`${PRELUDE}
local argsHash, now, allowUncertain = ARGV[7], ARGV[8], ARGV[9] == '1'
local leaseMs, maxUnsettled, member = tonumber(ARGV[10]), tonumber(ARGV[11]), ARGV[12]
local handedOver = tonumber(ARGV[13] or '')
local id, seq = guard(true)
if not id then return {'ledger_lost', seq} end
purge()
local found = read()

local function answer(status, e, retaken, claimedAt)
  return {status, id, seq, primary, replicated, e.argsHash, e.state, e.updatedAt, e.result, e.unavailable, retaken or '', claimedAt or ''}
end
-- retaken: the key was a write in doubt (uncertain, or pending past its lease).
local function take(retaken)
  local before = tonumber(redis.call('HGET', entry, 'claimedAt') or '')
  local mark = serverNow
  if before and before >= mark then mark = before + 1 end
  local claimedAt = string.format('%.0f', mark)
  redis.call('DEL', entry, blob)
  redis.call('ZREM', settled, member)
  redis.call('HSET', entry, 'argsHash', argsHash, 'state', 'pending', 'updatedAt', now, 'leaseMs', leaseMs, 'leaseFrom', serverNow, 'claimedAt', claimedAt)
  redis.call('SADD', unsettled, member)
  return answer('claimed', { argsHash = argsHash, state = 'pending', updatedAt = now, result = '', unavailable = '' }, retaken, claimedAt)
end
local function full()
  return redis.call('SCARD', unsettled) >= maxUnsettled
end

if not found then
  if full() then return {'ledger_full', id, seq, primary, replicated} end
  return take()
end
if found.argsHash ~= '' and found.argsHash ~= argsHash then return answer('args_mismatch', found) end
if found.state == 'succeeded' then return answer('succeeded', found) end
if found.state == 'failed' then
  -- Freed under a hold (SETTLE's holdMs, by the server's clock) that has not run out: its holder
  -- may still keep an answer there, unless it handed it over (handedOver names its claim). A
  -- hold that names no claim is passed by no claimer (core's isHeld reads it the same).
  if found.heldUntil and serverNow < found.heldUntil and (not handedOver or tonumber(found.claimedAt) ~= handedOver) then
    return answer('in_flight', found)
  end
  if full() then return {'ledger_full', id, seq, primary, replicated} end
  return take()
end
if found.state == 'pending' then
  -- The holder's lease counts, however short this claimer's is. An entry an earlier version
  -- wrote has no leaseFrom: its claimer's clock is all there is.
  local held
  if found.leaseFrom then held = serverNow - found.leaseFrom else held = tonumber(now) - tonumber(found.updatedAt) end
  if held < math.max(leaseMs, found.leaseMs) then
    return answer('in_flight', found)
  end
  if allowUncertain then return take('1') end
  redis.call('HSET', entry, 'state', 'uncertain', 'updatedAt', now)
  redis.call('HDEL', entry, 'leaseMs', 'leaseFrom')
  found.state, found.updatedAt = 'uncertain', now
  return answer('uncertain', found)
end
if allowUncertain then return take('1') end
return answer('uncertain', found)
`);

/**
 * Settles a key atomically. ARGV after the prelude's: state, now, result JSON ("" for none),
 * retentionMs, the key as a set member, claimedAt ("" for none: see `SettleOptions`), the result
 * a conditional settle expects (`SettleOptions.ifSucceeded`: "" for no condition, "-" for no
 * result, else "=" and its JSON; the settle is dropped unless the entry is `succeeded` with that
 * result blob, or with none for "-"), holdMs ("" for none: a `failed` settle naming the entry's
 * claim keeps the entry held for that claim until server time passes `heldUntil`, which any later
 * settle or claim that takes the key removes, and keeps the entry at least that long; one that
 * finds no entry creates it as a settle by hand does, holding nothing). An entry past its
 * retention reads as absent, as CLAIM reads it. A `failed`
 * or `uncertain` settle naming a claim is dropped when the entry's latest claim (its `claimedAt`,
 * marked by CLAIM; an entry an earlier version wrote has none, and a pending one is named by its
 * `updatedAt` as that version's settles named it) is another, or when it is `succeeded`; a
 * `succeeded` settle ends the claim (moves the mark past it). Settled entries get an `expiresAt`
 * (server time) and join
 * the settled set, but no Redis expiry: under a `volatile-*` policy only their result blob, which
 * has one, can be evicted. Uncertain entries join the unsettled set. The entry is written even
 * when the ledger is taken for lost (what is known is kept); the answer then says so.
 * Answers { "settled", epochId, seq, primary, replicated } or { "ledger_lost", reason }.
 */
export const SETTLE = script(`${PRELUDE}
local state, now, result, retentionMs, member = ARGV[7], ARGV[8], ARGV[9], tonumber(ARGV[10]), ARGV[11]
local claimedAt, expected = ARGV[12], ARGV[13]
local holdMs = tonumber(ARGV[14] or '')
local id, seq = guard(true)
purge()
local held = redis.call('HMGET', entry, 'argsHash', 'state', 'updatedAt', 'claimedAt', 'expiresAt')
-- An entry past its retention is forgotten, as a claim finds it (read): the settle creates the
-- key afresh, as one of a key nobody claimed.
local expired = tonumber(held[5])
if held[2] and expired and expired < serverNow then
  redis.call('DEL', entry, blob)
  held = {}
end
local holder = held[4]
if not holder and held[2] == 'pending' then holder = held[3] end
-- A late failed or uncertain settle must not free or mark a key whose latest claim is not the
-- settler's (another attempt took it, or a success ended the claim), nor demote one settled
-- succeeded meanwhile (by a person, or by that attempt).
local dropped = claimedAt ~= '' and state ~= 'succeeded' and held[2] and (held[2] == 'succeeded' or not holder or tonumber(holder) ~= tonumber(claimedAt))
-- A settle of the succeeded entry the settler read only: not one a newer success wrote since.
if not dropped and expected ~= '' then
  if held[2] ~= 'succeeded' then
    dropped = true
  else
    local stored = redis.call('GET', blob)
    if expected == '-' then dropped = stored ~= false else dropped = stored ~= string.sub(expected, 2) end
  end
end
if dropped then
  if not id then return {'ledger_lost', seq} end
  return {'settled', id, seq, primary, replicated}
end
local argsHash = held[1] or ''
-- The write is done: no claim may free or mark the key any more.
if holder and state == 'succeeded' then holder = string.format('%.0f', tonumber(holder) + 1) end
redis.call('DEL', entry, blob)
redis.call('HSET', entry, 'argsHash', argsHash, 'state', state, 'updatedAt', now)
if holder then redis.call('HSET', entry, 'claimedAt', holder) end
if state == 'uncertain' then
  redis.call('ZREM', settled, member)
  redis.call('SADD', unsettled, member)
else
  local expiresAt = serverNow + retentionMs
  -- A hold keeps the key for the claim this settle freed: there is none when the entry was
  -- absent (the settle creates it, as one by hand), and nobody could name it to pass the hold.
  if state == 'failed' and claimedAt ~= '' and holder and holdMs and holdMs > 0 then
    redis.call('HSET', entry, 'heldUntil', string.format('%.0f', serverNow + holdMs))
    -- Kept while held, whatever the retention: forgotten, the entry would be free.
    expiresAt = math.max(expiresAt, serverNow + holdMs)
  end
  redis.call('HSET', entry, 'expiresAt', expiresAt)
  if result ~= '' then
    redis.call('SET', blob, result, 'PX', retentionMs)
    redis.call('HSET', entry, 'hasResult', '1')
  end
  redis.call('SREM', unsettled, member)
  redis.call('ZADD', settled, expiresAt, member)
end
if not id then return {'ledger_lost', seq} end
return {'settled', id, seq, primary, replicated}
`);

/**
 * Reads an entry (checking the epoch without advancing it). Answers { "found", epochId, seq,
 * primary, replicated, argsHash, state, updatedAt, result, resultUnavailable, leaseMs, leaseLeft,
 * claimedAt } (claimedAt: a pending entry's latest claim, its updatedAt when an earlier version
 * claimed it, "" on other states), { "absent",
 * epochId, seq, primary, replicated } or { "ledger_lost", reason }.
 */
export const ENTRY = script(`${PRELUDE}
local id, seq = guard(false)
if not id then return {'ledger_lost', seq} end
local e = read()
if not e then return {'absent', id, seq, primary, replicated} end
-- A pending entry's lease left by the server's clock, as claims count it ('' for an entry an
-- earlier version wrote, with no leaseFrom).
local left = ''
if e.state == 'pending' and e.leaseFrom then left = tostring(math.max(0, e.leaseMs - (serverNow - e.leaseFrom))) end
-- A pending entry an earlier version claimed has no mark: its claim is its updatedAt, as SETTLE
-- names it (never none, which a holder reading it back would take for its own).
local claim = ''
if e.state == 'pending' then claim = e.claimedAt end
if e.state == 'pending' and claim == '' then claim = e.updatedAt end
return {'found', id, seq, primary, replicated, e.argsHash, e.state, e.updatedAt, e.result, e.unavailable, tostring(e.leaseMs), left, claim}
`);

/**
 * Clears a `lost` mark after a person checked the writes in doubt: a new epoch starts, and the
 * epochs that clients may still know are retired, so those clients adopt the new one. An epoch
 * without the mark is left as it is (a loss not yet seen there stays detectable).
 * KEYS: epoch hash. ARGV: the new epoch id. Answers the number of retired epochs.
 */
export const ACKNOWLEDGE = script(`
local epoch, newId = KEYS[1], ARGV[1]
if redis.call('HEXISTS', epoch, 'lost') == 0 then return 0 end
local id, lostFrom = unpack(redis.call('HMGET', epoch, 'id', 'lostFrom'))
local retired = 0
for _, old in ipairs({ id or '', lostFrom or '' }) do
  if old ~= '' then
    redis.call('HSET', epoch, 'retired:' .. old, '1')
    retired = retired + 1
  end
end
redis.call('HDEL', epoch, 'lost', 'lostFrom', 'lostAt')
local flat = redis.call('HGETALL', epoch)
for i = 1, #flat, 2 do
  if string.sub(flat[i], 1, 4) == 'end:' then redis.call('HDEL', epoch, flat[i]) end
end
redis.call('HSET', epoch, 'id', newId, 'seq', 0)
return retired
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

/**
 * Learning: decays every count of an outcome record to `now` and adds to one field, in one step
 * (the same arithmetic as core's `addToCounts`). The record is a hash: `@t` holds its time, every
 * other field a count as of it, written with 17 significant digits so nothing is lost. It expires
 * `ttlMs` after its last addition; the index (a sorted set by time) drops members older than the
 * ttl and, past the cap, the least recently updated records with them.
 * KEYS: record hash, index. ARGV: field, by, now, halfLifeMs, ttlMs, cap, index member (the
 * caller's key), record key prefix. Answers the record as a flat list of field, value.
 */
export const ADD_OUTCOME = script(`
local record, index = KEYS[1], KEYS[2]
local field, by, now, half = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local ttl, cap, member, recordPrefix = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], ARGV[8]
local flat = redis.call('HGETALL', record)
local updated = nil
local counts = {}
for i = 1, #flat, 2 do
  if flat[i] == '@t' then updated = tonumber(flat[i + 1]) else counts[flat[i]] = tonumber(flat[i + 1]) end
end
local at = now
if updated ~= nil and updated > now then at = updated end
local factor = 1
if updated ~= nil and at > updated then factor = 2 ^ (-(at - updated) / half) end
counts[field] = (counts[field] or 0) * 1
local out = {'@t', string.format('%.17g', at)}
for name, count in pairs(counts) do
  local value = count * factor
  if name == field then value = value + by end
  out[#out + 1] = name
  out[#out + 1] = string.format('%.17g', value)
end
redis.call('DEL', record)
redis.call('HSET', record, unpack(out))
redis.call('PEXPIRE', record, math.ceil(ttl))
redis.call('ZADD', index, at, member)
redis.call('ZREMRANGEBYSCORE', index, '-inf', '(' .. string.format('%.17g', at - ttl))
local n = redis.call('ZCARD', index)
if n > cap then
  local old = redis.call('ZRANGE', index, 0, n - cap - 1)
  for _, m in ipairs(old) do redis.call('DEL', recordPrefix .. m) end
  redis.call('ZREMRANGEBYRANK', index, 0, n - cap - 1)
end
return out
`);

/**
 * Lists outcome records, the most recently updated first. Members whose record expired leave the
 * index. KEYS: index. ARGV: limit, record key prefix. Answers one array per record: its key, then
 * its flat list of fields and values (`@t` included).
 */
export const LIST_OUTCOMES = script(`
local index, limit, recordPrefix = KEYS[1], tonumber(ARGV[1]), ARGV[2]
local out = {}
local start = 0
while #out < limit do
  local members = redis.call('ZREVRANGE', index, start, start + limit - 1)
  if #members == 0 then break end
  start = start + #members
  for _, m in ipairs(members) do
    local flat = redis.call('HGETALL', recordPrefix .. m)
    if #flat == 0 then
      redis.call('ZREM', index, m)
      start = start - 1
    elseif #out < limit then
      table.insert(flat, 1, m)
      out[#out + 1] = flat
    end
  end
end
return out
`);

/**
 * Deletes the outcome records whose key starts with a prefix ("" for all). KEYS: index. ARGV:
 * prefix, record key prefix. Answers how many records existed and were deleted.
 */
export const RESET_OUTCOMES = script(`
local index, prefix, recordPrefix = KEYS[1], ARGV[1], ARGV[2]
local removed = 0
for _, m in ipairs(redis.call('ZRANGE', index, 0, -1)) do
  if string.sub(m, 1, #prefix) == prefix then
    removed = removed + redis.call('DEL', recordPrefix .. m)
    redis.call('ZREM', index, m)
  end
end
return removed
`);
