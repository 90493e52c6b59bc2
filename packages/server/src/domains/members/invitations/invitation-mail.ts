import type { Role } from '../../../http/principal.js';
import type { EmailMessage } from '../../mail/outbox.js';

interface InvitationMailInput {
  to: string;
  /** The member id of the invitation (`mbr_…`), what the CLI accepts. */
  memberId: string;
  projectName: string;
  inviterName: string;
  role: Role;
  expiresAt: string;
  publicUrl: string;
  /** The one-time invitation token: proves the address at sign-up or at acceptance. */
  token: string;
  /** Whether the invitee has no account yet (signs up with the link first). */
  newAccount: boolean;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The invitation e-mail. Every invitee gets a link carrying the one-time token
 * (`/invite?token=…`): only the owner of the mailbox has it, so it is what
 * proves the address. Without an account, signing up with it proves it; with
 * an unproven account, accepting with it does (anyone can sign up with an
 * address they do not own while `SIGNUP_POLICY=open`).
 */
export function invitationMail(input: InvitationMailInput): EmailMessage {
  const expires = input.expiresAt.slice(0, 10);
  // Names are user input: no line breaks in a header.
  const subject = `${input.inviterName} invited you to ${input.projectName} on Coffer`.replace(
    /[\r\n\t]+/g,
    ' ',
  );
  const link = `${input.publicUrl}/invite?token=${encodeURIComponent(input.token)}`;
  const action = input.newAccount
    ? 'Create your Coffer account with this link, then accept the invitation (the link works for this invitation only):'
    : 'Sign in and accept it with this link (it works for this invitation only and confirms this e-mail address is yours):';
  // Only server-made values (id, token, configured URL) in commands meant to be pasted.
  const cli = input.newAccount
    ? [`coffer signup --invitation '${link}'`, `coffer invitations accept ${input.memberId}`]
    : [`coffer invitations accept ${input.memberId} --token ${input.token}`];
  const text = [
    `${input.inviterName} invited you to join the project "${input.projectName}" as ${input.role}.`,
    '',
    action,
    link,
    '',
    'Or in the CLI:',
    ...cli,
    '',
    `The invitation expires on ${expires}. If you did not expect it, ignore this e-mail.`,
  ].join('\n');
  const html = [
    `<p>${escapeHtml(input.inviterName)} invited you to join the project <strong>${escapeHtml(input.projectName)}</strong> as ${input.role}.</p>`,
    `<p>${escapeHtml(action)}<br><a href="${escapeHtml(link)}">${escapeHtml(link)}</a></p>`,
    `<p>Or in the CLI:<br>${cli.map((c) => `<code>${escapeHtml(c)}</code>`).join('<br>')}</p>`,
    `<p>The invitation expires on ${expires}. If you did not expect it, ignore this e-mail.</p>`,
  ].join('\n');
  return { to: input.to, subject, text, html };
}
