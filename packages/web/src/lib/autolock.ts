import { useSyncExternalStore } from 'react';
import { keyring } from './keyring';

/**
 * Drops the keys after a period without keyboard or pointer activity. The
 * period is a preference (not a secret), so it is kept in localStorage. Its
 * last minute is announced (useLockingAt), so unsaved work can be reviewed.
 */
const STORAGE_KEY = 'coffer.autolock-minutes';
export const AUTOLOCK_CHOICES = [1, 5, 15, 30, 60, 240] as const;
const DEFAULT_MINUTES = 15;

let minutes = readMinutes();
let timer: ReturnType<typeof setTimeout> | undefined;
let warningTimer: ReturnType<typeof setTimeout> | undefined;
/** While the lock is near (its last minute, or half the period when shorter): when it comes. */
let lockingAt: number | null = null;
const listeners = new Set<() => void>();
const warningListeners = new Set<() => void>();
const WARNING_MS = 60_000;

function setLockingAt(value: number | null): void {
  if (value === lockingAt) return;
  lockingAt = value;
  warningListeners.forEach((listener) => listener());
}

function readMinutes(): number {
  const stored = Number(window.localStorage.getItem(STORAGE_KEY));
  return (AUTOLOCK_CHOICES as readonly number[]).includes(stored) ? stored : DEFAULT_MINUTES;
}

function arm(): void {
  clearTimeout(timer);
  clearTimeout(warningTimer);
  setLockingAt(null);
  if (!keyring.isUnlocked()) return;
  const period = minutes * 60_000;
  const deadline = Date.now() + period;
  warningTimer = setTimeout(
    () => setLockingAt(deadline),
    period - Math.min(WARNING_MS, period / 2),
  );
  timer = setTimeout(() => {
    setLockingAt(null);
    keyring.lock();
  }, period);
}

let lastArmed = 0;
function activity(): void {
  // Re-arming on every mouse move would churn timers; once a second is plenty
  // (but at once while the lock warning is up: any activity cancels it).
  const now = Date.now();
  if (now - lastArmed < 1000 && lockingAt === null) return;
  lastArmed = now;
  arm();
}

export function startAutolock(): void {
  for (const event of ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart']) {
    window.addEventListener(event, activity, { passive: true, capture: true });
  }
  keyring.subscribe(arm);
  arm();
}

export function setAutolockMinutes(value: number): void {
  minutes = value;
  window.localStorage.setItem(STORAGE_KEY, String(value));
  arm();
  listeners.forEach((listener) => listener());
}

/** When the auto-lock comes, during its warning period; null otherwise. */
export function useLockingAt(): number | null {
  return useSyncExternalStore(
    (listener) => {
      warningListeners.add(listener);
      return () => warningListeners.delete(listener);
    },
    () => lockingAt,
  );
}

export function useAutolockMinutes(): number {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => minutes,
  );
}
