import { useSyncExternalStore } from 'react';

/** The dashboard's colours: the system's (prefers-color-scheme), or always light or dark. */
export type Theme = 'system' | 'light' | 'dark';

export const THEMES: readonly [Theme, string][] = [
  ['system', 'System'],
  ['light', 'Light'],
  ['dark', 'Dark'],
];

// A display preference, not a secret: kept in localStorage so it holds before sign-in.
const STORAGE_KEY = 'coffer.theme';
const listeners = new Set<() => void>();

function stored(): Theme {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

let current: Theme = 'system';

/**
 * `<html data-theme="light|dark">` pins the colours (styles.css sets
 * `color-scheme` from it, and every colour follows with `light-dark()`); no
 * attribute follows the system. An attribute, not a style: the CSP allows no
 * style set at run time.
 */
function apply(theme: Theme): void {
  current = theme;
  if (theme === 'system') document.documentElement.removeAttribute('data-theme');
  else document.documentElement.setAttribute('data-theme', theme);
}

/** Applies the stored choice (at start-up) and follows a choice made in another tab. */
export function startTheme(): void {
  apply(stored());
  window.addEventListener('storage', (event) => {
    if (event.key !== STORAGE_KEY && event.key !== null) return;
    apply(stored());
    for (const listener of listeners) listener();
  });
}

export function setTheme(theme: Theme): void {
  try {
    if (theme === 'system') localStorage.removeItem(STORAGE_KEY);
    else localStorage.setItem(STORAGE_KEY, theme);
  } catch {
    // storage refused (private mode): the choice holds until the page closes
  }
  apply(theme);
  for (const listener of listeners) listener();
}

export function useTheme(): Theme {
  return useSyncExternalStore(
    (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    () => current,
  );
}
