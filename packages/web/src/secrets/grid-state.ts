import { useSyncExternalStore } from 'react';

/**
 * Which cell has the keyboard focus (roving tabindex), which one is being
 * edited and which one is under the pointer. Each cell subscribes to whether it is the one, so moving around the
 * grid re-renders two cells, never the grid.
 */
class Pointer {
  private current: string | null = null;
  private readonly listeners = new Set<() => void>();
  subscribe = (listener: () => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
  get = () => this.current;
  set(value: string | null): void {
    if (value === this.current) return;
    this.current = value;
    this.listeners.forEach((listener) => listener());
  }
}

export const activeCell = new Pointer();
export const editingCell = new Pointer();
/** The cell under the pointer, and the focused one: only they render their version, date and author. */
export const hoveredCell = new Pointer();
export const focusedCell = new Pointer();

export const cellId = (row: number, column: number) => `${row}:${column}`;

export function useIsActive(id: string): boolean {
  return useSyncExternalStore(activeCell.subscribe, () => activeCell.get() === id);
}

export function useIsHovered(id: string): boolean {
  return useSyncExternalStore(hoveredCell.subscribe, () => hoveredCell.get() === id);
}

export function useIsFocused(id: string): boolean {
  return useSyncExternalStore(focusedCell.subscribe, () => focusedCell.get() === id);
}

export function useIsEditing(id: string): boolean {
  return useSyncExternalStore(editingCell.subscribe, () => editingCell.get() === id);
}

/** Moves the focus to a cell of the grid (if it exists) and makes it the tab stop. */
export function focusCell(grid: HTMLElement | null, row: number, column: number): boolean {
  const target = grid?.querySelector<HTMLElement>(`[data-cell="${cellId(row, column)}"]`);
  if (!target) return false;
  activeCell.set(cellId(row, column));
  target.focus();
  return true;
}
