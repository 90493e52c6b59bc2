/**
 * A subscribing connection waits for Redis however the shared client is tuned:
 * commands queue until it connects, and none times out. With the shared
 * client's 1 s command timeout, a SUBSCRIBE sent while the machine was busy
 * (a server starting under load) failed once and was never sent again, and
 * that instance silently missed every invalidation. ioredis subscribes again
 * by itself after a reconnection.
 */
export const SUBSCRIBER_OPTIONS = {
  lazyConnect: false,
  enableOfflineQueue: true,
  commandTimeout: undefined,
} as const;
