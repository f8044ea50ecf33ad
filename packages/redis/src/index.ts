// The public API of @governor/redis: an explicit list, pinned by index.test.ts.

export {
  createRedisStore,
  type RedisStore,
  type RedisStoreClient,
  type RedisStoreCluster,
  type RedisStoreOptions,
  type RedisStoreSentinel,
} from "./redis-store.ts";
export type { RedisStoreWarning } from "./server-checks.ts";
