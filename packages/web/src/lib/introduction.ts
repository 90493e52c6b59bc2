import { parseIntroductionLink } from '@coffer/sdk';

/**
 * An introduction link (`/invite?member=mbr_…#k=…`) as it was opened. The part
 * after `#` is a secret between the inviter and the invitee: it never reaches a
 * server, and it is taken out of the address bar at once (so it is not in the
 * history or a bookmark) and kept in this module's memory only.
 */
let opened: { link: string; memberId: string } | null = null;

export function captureIntroduction(): void {
  const { pathname, search, hash } = window.location;
  if (pathname !== '/invite' || !hash.includes('k=')) return;
  try {
    const link = window.location.href;
    opened = { link, memberId: parseIntroductionLink(link).memberId };
  } catch {
    opened = null; // not an introduction link: the page says so
  }
  window.history.replaceState(window.history.state, '', pathname + search);
}

export const introduction = {
  get: () => opened,
  clear: () => (opened = null),
};
