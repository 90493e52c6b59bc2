import type { Role } from '../../http/principal.js';
import type { EmailMessage } from '../mail/outbox.js';

export interface InvitationMailInput {
  to: string;
  projectName: string;
  inviterName: string;
  role: Role;
  expiresAt: string;
  publicUrl: string;
  /** The one-time sign-up token, for an invitee without an account; `null` otherwise. */
  token: string | null;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The invitation e-mail. An invitee without an account gets a link carrying a
 * one-time token (`/invite?token=…`): signing up with it proves the address.
 * An existing user is told to sign in and accept the invitation.
 */
export function invitationMail(input: InvitationMailInput): EmailMessage {
  const expires = input.expiresAt.slice(0, 10);
  // Names are user input: no line breaks in a header.
  const subject = `${input.inviterName} invited you to ${input.projectName} on Coffer`.replace(
    /[\r\n\t]+/g,
    ' ',
  );
  const link = input.token
    ? `${input.publicUrl}/invite?token=${encodeURIComponent(input.token)}`
    : `${input.publicUrl}/invitations`;
  const action = input.token
    ? 'Create your Coffer account with this link to accept (it works once):'
    : 'Sign in to accept or decline it (in the dashboard, or `coffer invitations list` in the CLI):';
  const text = [
    `${input.inviterName} invited you to join the project "${input.projectName}" as ${input.role}.`,
    '',
    action,
    link,
    '',
    `The invitation expires on ${expires}. If you did not expect it, ignore this e-mail.`,
  ].join('\n');
  const html = [
    `<p>${escapeHtml(input.inviterName)} invited you to join the project <strong>${escapeHtml(input.projectName)}</strong> as ${input.role}.</p>`,
    `<p>${escapeHtml(action)}<br><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>`,
    `<p>The invitation expires on ${expires}. If you did not expect it, ignore this e-mail.</p>`,
  ].join('\n');
  return { to: input.to, subject, text, html };
}
