import type { Redis } from 'ioredis';
import { SUBSCRIBER_OPTIONS } from './redis-options.js';

/** A subscription to one Redis pub/sub channel, on a connection of its own. */
export interface ChannelListener {
  /** Resolves once subscribed (or once subscribing failed, which `onError` was told). */
  readonly subscribed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Listens to `channel` on a duplicate of `redis`: a subscribing connection of
 * its own that waits for Redis (and re-subscribes after a reconnect) however
 * the shared client is tuned. Connection errors are left to the shared
 * client's log; a message missed meanwhile is each caller's to tolerate.
 */
export function listenOnChannel(
  redis: Redis,
  channel: string,
  onMessage: (message: string) => void,
  onError: (err: unknown) => void,
): ChannelListener {
  const subscriber = redis.duplicate(SUBSCRIBER_OPTIONS);
  subscriber.on('message', (from: string, message: string) => {
    if (from === channel) onMessage(message);
  });
  subscriber.on('error', () => undefined);
  return {
    subscribed: subscriber.subscribe(channel).then(() => undefined, onError),
    async close() {
      await subscriber.quit().catch(() => subscriber.disconnect());
    },
  };
}
