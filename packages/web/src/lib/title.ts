import { useEffect } from 'react';

/** `document.title` for the screen shown: its parts, most specific first, then "Coffer". */
export function useTitle(...parts: (string | null | undefined)[]): void {
  const title = [...parts.filter(Boolean), 'Coffer'].join(' · ');
  useEffect(() => {
    document.title = title;
  }, [title]);
}
