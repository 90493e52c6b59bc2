import { type Role } from '@coffer/sdk';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { copyText } from '../lib/clipboard';
import { toProblem } from '../lib/errors';
import { Field } from '../ui/Field';
import { inviteWith, ROLES } from './invite';

export function InviteForm({
  projectId,
  onInvited,
}: {
  projectId: string;
  onInvited: () => Promise<void>;
}) {
  const [copied, setCopied] = useState(false);
  const invite = useMutation({
    mutationFn: (input: { email: string; role: Role }) => inviteWith(projectId, input),
    onMutate: () => setCopied(false),
    onSuccess: onInvited,
  });
  const problem = invite.error ? toProblem(invite.error) : null;
  const [role, setRole] = useState<Role>('developer');

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const email = String(new FormData(form).get('email')).trim();
    invite.mutate({ email, role }, { onSuccess: () => form.reset() });
  }

  return (
    <form className="invite-form card" onSubmit={submit} aria-label="Invite a member">
      <Field
        label="Invite by e-mail"
        name="email"
        type="email"
        required
        autoComplete="off"
        error={problem?.message}
      />
      <div className="field">
        <label htmlFor="invite-role">Role</label>
        <select id="invite-role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {ROLES.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </div>
      <button type="submit" className="primary" disabled={invite.isPending}>
        {invite.isPending ? 'Inviting…' : 'Invite'}
      </button>
      {invite.isSuccess ? (
        <div role="status" className="small stack invite-result">
          <p>Invited {invite.data.member.user.email}. They get an e-mail with a link to join.</p>
          {invite.data.link ? (
            <>
              <p>
                <strong>Send them this introduction link yourself</strong> (chat, in person): it
                lets their browser prove its keys to your team, so the project key can be granted
                without comparing fingerprints. It is shown only now.
              </p>
              <label className="field">
                <span>Introduction link</span>
                <textarea
                  className="mono introduction-link"
                  readOnly
                  rows={2}
                  value={invite.data.link}
                  onFocus={(e) => e.currentTarget.select()}
                />
              </label>
              <div>
                <button
                  type="button"
                  onClick={() => void copyText(invite.data.link!).then(() => setCopied(true))}
                >
                  {copied ? 'Copied' : 'Copy the link'}
                </button>
              </div>
            </>
          ) : (
            <p>
              Once they accept, grant them the project key under Access after comparing their key
              fingerprint with them.
            </p>
          )}
        </div>
      ) : null}
    </form>
  );
}

/**
 * In the removal dialog: the API keys and CI tokens the member created, which
 * the removal revokes with them, so an admin sees which deployments or
 * pipelines stop before confirming.
 */
