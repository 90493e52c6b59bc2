import { parseIntroductionLink } from '@coffer/sdk/vault/introduction';
import { introduction } from '../lib/introduction';

/** The introduction link this tab was opened with and whom it introduces; null when it is none. */
export function openedIntroduction(): { link: string; memberId: string } | null {
  const link = introduction.link();
  if (link === null) return null;
  try {
    return { link, memberId: parseIntroductionLink(link).memberId };
  } catch {
    return null; // not an introduction link: the page says so
  }
}
