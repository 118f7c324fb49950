//! The store's Lua scripts: each change of a task is one script, so that it is atomic on
//! Redis for every bridge of the group. Keys (after the prefix): `task:<id>` a hash (`task`
//! the task as JSON, `version`, `state`, `context`, `terminal`), `hooks:<id>` a hash of its
//! webhooks (config id → JSON), `created` (ids by creation, in ms) and `ended` (ids by end);
//! every change is published on the channel `changed` (the task's id).

/// Creates (or replaces) a task; first forgets finished tasks past their TTL and, while the
/// store is full, those that finished first. 0 when every task kept is still running.
/// KEYS: task, created, ended. ARGV: prefix, id, json, state, context, terminal, now, ttl, max,
/// running_ttl.
pub const CREATE: &str = r"
local p, id, now, ttl, max = ARGV[1], ARGV[2], tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local function forget(t)
  redis.call('DEL', p .. 'task:' .. t, p .. 'hooks:' .. t)
  redis.call('ZREM', KEYS[2], t)
  redis.call('ZREM', KEYS[3], t)
end
for _, t in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now - ttl)) do forget(t) end
if redis.call('EXISTS', KEYS[1]) == 0 and redis.call('ZCARD', KEYS[2]) >= max then
  for _, t in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    if redis.call('EXISTS', p .. 'task:' .. t) == 0 then forget(t) end
  end
  while redis.call('ZCARD', KEYS[2]) >= max do
    local first = redis.call('ZRANGE', KEYS[3], 0, 0)
    if #first == 0 then return 0 end
    forget(first[1])
  end
end
redis.call('HSET', KEYS[1], 'task', ARGV[3], 'state', ARGV[4], 'context', ARGV[5], 'terminal', ARGV[6])
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
redis.call('ZADD', KEYS[2], 'NX', now, id)
if ARGV[6] == '1' then
  redis.call('ZADD', KEYS[3], 'NX', now, id)
  redis.call('PEXPIRE', KEYS[1], ttl)
else
  redis.call('PEXPIRE', KEYS[1], ARGV[10])
end
redis.call('PUBLISH', p .. 'changed', id)
return v
";

/// Replaces a task's state. A task that ended stays as it ended (the same end may be written
/// again); with an expected version, a task changed since is left as it is.
/// KEYS: task, ended, hooks. ARGV: prefix, id, json, state, terminal, now, ttl, expected ('' for
/// any). Returns {version, previous JSON, webhooks...} (the previous state and the webhooks
/// only when the task has webhooks), or {-1} unknown, {-2} ended otherwise, {-3} changed.
pub const UPDATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return {-1} end
local was = redis.call('HMGET', KEYS[1], 'state', 'terminal', 'task', 'version')
if was[2] == '1' and was[1] ~= ARGV[4] then return {-2} end
if ARGV[8] ~= '' and was[4] ~= ARGV[8] then return {-3} end
redis.call('HSET', KEYS[1], 'task', ARGV[3], 'state', ARGV[4], 'terminal', ARGV[5])
local v = redis.call('HINCRBY', KEYS[1], 'version', 1)
if ARGV[5] == '1' then
  if was[2] ~= '1' then redis.call('ZADD', KEYS[2], 'NX', ARGV[6], ARGV[2]) end
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  redis.call('PEXPIRE', KEYS[3], ARGV[7])
end
redis.call('PUBLISH', ARGV[1] .. 'changed', ARGV[2])
local out = {v}
if redis.call('EXISTS', KEYS[3]) == 1 then
  out[2] = was[3]
  for _, hook in ipairs(redis.call('HVALS', KEYS[3])) do table.insert(out, hook) end
end
return out
";

/// A page of the tasks, newest first, of a context and a state ('' for any); ids whose task is
/// gone (expired) are dropped on the way. KEYS: created. ARGV: prefix, context, state, from,
/// size. Returns {matching, {JSON...}}.
pub const LIST: &str = r"
local from, size, matched, page = tonumber(ARGV[4]), tonumber(ARGV[5]), 0, {}
for _, id in ipairs(redis.call('ZREVRANGE', KEYS[1], 0, -1)) do
  local f = redis.call('HMGET', ARGV[1] .. 'task:' .. id, 'context', 'state', 'task')
  if not f[3] then
    redis.call('ZREM', KEYS[1], id)
  elseif (ARGV[2] == '' or f[1] == ARGV[2]) and (ARGV[3] == '' or f[2] == ARGV[3]) then
    if matched >= from and #page < size then table.insert(page, f[3]) end
    matched = matched + 1
  end
end
return {matched, page}
";

/// Sets a webhook of a task (replacing the one of the same id), kept as long as the task.
/// KEYS: task, hooks. ARGV: config id, JSON, most. Returns 1, or -1 unknown task, -2 too many.
pub const SAVE_HOOK: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
  return -2
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
";
