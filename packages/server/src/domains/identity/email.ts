import { validation } from '../../errors.js';

const MAX_EMAIL_LENGTH = 254;
const EMAIL_FORMAT = /^[^\s@]+@[^\s@.]+(?:\.[^\s@.]+)+$/;

/**
 * An e-mail address as stored and compared: trimmed and lower-cased (addresses
 * compare case-insensitively), refused with `400 validation_error` on `email`
 * when too long or not an address. Every path that takes an address (sign-up,
 * login, recovery, invitations) goes through it.
 */
export function normalizeEmail(raw: string): string {
  const email = raw.trim().toLowerCase();
  if (email.length > MAX_EMAIL_LENGTH) throw validation('email', 'too_long', 'email is too long');
  if (!EMAIL_FORMAT.test(email))
    throw validation('email', 'invalid', 'email is not a valid e-mail address');
  return email;
}
