import { useSyncExternalStore } from 'react';
import { keyring } from './keyring';

/**
 * Drops the keys after a period without keyboard or pointer activity. The
 * period is a preference (not a secret), so it is kept in localStorage.
 */
const STORAGE_KEY = 'coffer.autolock-minutes';
export const AUTOLOCK_CHOICES = [1, 5, 15, 30, 60, 240] as const;
const DEFAULT_MINUTES = 15;

let minutes = readMinutes();
let timer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<() => void>();

function readMinutes(): number {
  const stored = Number(window.localStorage.getItem(STORAGE_KEY));
  return (AUTOLOCK_CHOICES as readonly number[]).includes(stored) ? stored : DEFAULT_MINUTES;
}

function arm(): void {
  clearTimeout(timer);
  if (keyring.isUnlocked()) timer = setTimeout(() => keyring.lock(), minutes * 60_000);
}

let lastArmed = 0;
function activity(): void {
  // Re-arming on every mouse move would churn timers; once a second is plenty.
  const now = Date.now();
  if (now - lastArmed < 1000) return;
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

export function useAutolockMinutes(): number {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => minutes,
  );
}
