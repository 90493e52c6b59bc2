import { fingerprint, getMemberKeys, ready, type MemberKeys } from '@coffer/sdk';
import { PROJECT_OPTION, str, type Command } from '../cli/command.js';
import { CliError } from '../cli/errors.js';
import { note, printJson, printTable, shortTime } from '../cli/output.js';
import { confirm, interactive } from '../cli/prompt.js';
import { Context } from '../context.js';
import { inProject } from '../scope.js';

const list: Command = {
  name: 'keys list',
  summary: 'the keys you have accepted for other users (your key pins)',
  description:
    'Every user whose keys your clients have accepted: on first use (tofu), or verified after a fingerprint comparison or an introduction. Coffer refuses (key_changed) when the server later shows other keys for one of them. The list is signed by your own key and stored on the server, so it follows your account; this machine remembers its version to refuse a rollback.',
  async run({ values }) {
    const ctx = new Context(values);
    const client = await ctx.userClient();
    await ready();
    const pins = await ctx.keyPins(client);
    const rows = pins.list();
    if (ctx.json) return printJson({ version: pins.version, pins: rows });
    printTable(
      ['email', 'user', 'fingerprint', 'status', 'since'],
      rows.map((p) => [
        p.email,
        p.user_id,
        fingerprint(p.public_key, p.signing_public_key),
        p.status,
        shortTime(p.at),
      ]),
      'No keys pinned yet.',
    );
  },
};

/** A member with keys by e-mail or user id. */
function findMemberKeys(members: MemberKeys[], ref: string): MemberKeys {
  const wanted = ref.trim().toLowerCase();
  const found = members.find(
    (m) => m.user_id === ref || m.member_id === ref || m.email.toLowerCase() === wanted,
  );
  if (!found) {
    throw new CliError(
      'not_found',
      `${ref} is not an active admin or developer of this project (only they hold keys here)`,
    );
  }
  return found;
}

const verify: Command = {
  name: 'keys verify',
  summary: "accept a user's keys after comparing their fingerprint with them",
  args: 'USER',
  positionals: [1, 1],
  description: [
    'USER is an e-mail address or a user id of a member of the project. Shows the fingerprint',
    'of the keys the server shows for them now: compare it with the one `coffer whoami` shows',
    'them (in person or on a call). Once you confirm (or pass --fingerprint F, the one you',
    'compared), those keys are pinned as verified, replacing keys pinned before: this is how',
    'a key change that Coffer refused (key_changed) is let in after a real comparison.',
  ].join('\n'),
  options: {
    ...PROJECT_OPTION,
    fingerprint: {
      type: 'string',
      value: 'F',
      description: 'the fingerprint you compared with the user',
    },
  },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    await ready();
    const user = findMemberKeys(await getMemberKeys(client, project), positionals[0]!);
    const pins = await ctx.keyPins(client);
    let expected = str(values, 'fingerprint');
    if (expected === undefined) {
      if (!interactive()) {
        throw new CliError(
          'confirmation_required',
          'compare the fingerprint with them, then pass --fingerprint F',
        );
      }
      const before = pins.get(user.user_id);
      note(
        `${user.name} <${user.email}> (${user.role})\nKey fingerprint now: ${user.fingerprint}${before ? `\nPinned before:       ${fingerprint(before.public_key, before.signing_public_key)} (${before.status})` : ''}`,
      );
      if (!(await confirm('Does this fingerprint match the one they see?'))) {
        throw new CliError('cancelled', 'nothing verified');
      }
      expected = user.fingerprint;
    }
    pins.verify(user, expected);
    await pins.save();
    if (ctx.json)
      return printJson({
        user_id: user.user_id,
        email: user.email,
        fingerprint: user.fingerprint,
        status: 'verified',
        version: pins.version,
      });
    note(`Verified the keys of ${user.email} (fingerprint ${user.fingerprint}).`);
  },
};

export const commands: Command[] = [list, verify];
