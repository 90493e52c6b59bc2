/**
 * An introduction link (`/invite?member=mbr_…#k=…`) as it was opened. The part
 * after `#` is a secret between the inviter and the invitee: it never reaches a
 * server, and it is taken out of the address bar at once (so it is not in the
 * history or a bookmark) and kept in this module's memory only. It is read
 * (pages/introduction-link.ts) by the pages that use it, loaded later.
 */
let opened: string | null = null;

export function captureIntroduction(): void {
  const { pathname, search, hash } = window.location;
  if (pathname !== '/invite' || !hash.includes('k=')) return;
  opened = window.location.href;
  window.history.replaceState(window.history.state, '', pathname + search);
}

export const introduction = {
  link: () => opened,
  clear: () => (opened = null),
};
