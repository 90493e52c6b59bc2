import {
  grantMember,
  isVaultError,
  pendingGrants,
  rekey,
  vouchFor,
  type CofferClient,
  type PendingGrant,
  type VouchedBy,
} from '@coffer/sdk';
import { PROJECT_OPTION, str, type Command } from '../cli/command.js';
import { CliError } from '../cli/errors.js';
import { note, printJson, printLine, printTable } from '../cli/output.js';
import { progressBar } from '../cli/progress.js';
import { confirm, interactive } from '../cli/prompt.js';
import type { Context } from '../context.js';
import { inProject } from '../scope.js';
import { openProjectVault } from '../vault-access.js';

const status: Command = {
  name: 'vault status',
  summary:
    "the vault's key epoch, whether a re-key is recommended, and (admins) who awaits a grant",
  options: PROJECT_OPTION,
  async run({ values }) {
    const { ctx, client, project } = await inProject(values);
    const vault = await openProjectVault(ctx, client, project);
    const s = vault.status;
    const holdsKeys = vault.holdsKeys;
    vault.forget();
    if (ctx.json) {
      return printJson({
        project_id: s.project_id,
        epoch: s.epoch,
        initialized: s.initialized,
        rekey_recommended: s.rekey_recommended,
        holds_keys: holdsKeys,
        ...(s.pending_grants ? { pending_grants: s.pending_grants } : {}),
      });
    }
    printLine(`Project:           ${s.project_id}`);
    printLine(`Key epoch:         ${s.initialized ? s.epoch : 'not initialised'}`);
    printLine(
      `Your access:       ${holdsKeys ? 'you hold the key' : 'no key (viewers never hold one; new members wait for a grant)'}`,
    );
    printLine(
      `Re-key:            ${s.rekey_recommended ? 'RECOMMENDED (a member with access left): coffer vault rekey' : 'not needed'}`,
    );
    if (s.pending_grants) {
      printLine('');
      printLine('Members awaiting the vault key (compare fingerprints with them before granting):');
      printTable(
        ['email', 'role', 'fingerprint'],
        s.pending_grants.map((p) => [p.email, p.role, p.fingerprint]),
        '(none)',
      );
    }
  },
};

/** A pending member by e-mail, `usr_` id or `mbr_` id. */
function findPending(pending: PendingGrant[], ref: string): PendingGrant {
  const wanted = ref.trim().toLowerCase();
  const member = pending.find(
    (p) => p.user_id === ref || p.member_id === ref || p.email.toLowerCase() === wanted,
  );
  if (!member) {
    throw new CliError(
      'not_pending',
      `${ref} is not waiting for the vault key (already granted, a viewer, not yet accepted, or not a member)`,
    );
  }
  return member;
}

const grant: Command = {
  name: 'vault grant',
  summary: 'give a member the vault key, after checking their key fingerprint (admins)',
  args: 'MEMBER',
  positionals: [1, 1],
  description: [
    'MEMBER is an e-mail address, a user id (usr_…) or a member id (mbr_…).',
    'A member who accepted with the introduction link of `coffer members invite` proved',
    'their keys: the proof is checked against the keys the server shows, and a mismatch',
    'is refused (introduction_mismatch). Otherwise it shows the fingerprint of the',
    'member’s keys: compare it with the one `coffer whoami` shows them (in person or on a',
    'call) before you confirm, so nobody, not even the server, can slip in a key of its',
    'own; --fingerprint F grants only if the keys match F. Keys you pinned before must not',
    'have changed (key_changed). The granted keys are pinned as verified.',
  ].join('\n'),
  options: {
    ...PROJECT_OPTION,
    yes: {
      type: 'boolean',
      short: 'y',
      description: 'grant without asking when an introduction or a pin vouches (scripts)',
    },
    fingerprint: {
      type: 'string',
      value: 'F',
      description: 'grant only if the member’s fingerprint is F',
    },
  },
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const vault = await openProjectVault(ctx, client, project);
    const pins = await vault.pins();
    try {
      const member = findPending(await pendingGrants(vault), positionals[0]!);
      let expected = str(values, 'fingerprint');
      let vouched: VouchedBy | null = null;
      if (expected === undefined) {
        try {
          vouched = vouchFor(vault, member, pins ? { pins } : {});
        } catch (err) {
          if (!isVaultError(err, 'unverified_member')) throw err;
        }
      }
      if (expected === undefined && vouched === null) {
        if (!interactive()) {
          throw new CliError(
            values.yes === true ? 'unverified_member' : 'confirmation_required',
            `${member.email} joined without a verified introduction: compare their key fingerprint with them and pass --fingerprint F`,
          );
        }
        note(
          `${member.name} <${member.email}> (${member.role})\nKey fingerprint: ${member.fingerprint}`,
        );
        if (!(await confirm('Does this fingerprint match the one the member sees?'))) {
          throw new CliError('cancelled', 'not granted');
        }
        expected = member.fingerprint;
      }
      const granted = await grantMember(vault, member.user_id, {
        ...(expected !== undefined ? { expectedFingerprint: expected } : {}),
        ...(pins ? { pins } : {}),
      });
      if (ctx.json) {
        return printJson({
          user_id: granted.userId,
          email: member.email,
          fingerprint: granted.fingerprint,
          epoch: granted.epoch,
          verified_by: vouched ?? 'fingerprint',
        });
      }
      note(
        `Granted the vault key (epoch ${granted.epoch}) to ${member.email}, key fingerprint ${granted.fingerprint}${vouched === 'introduction' ? ' (keys verified by their introduction)' : ''}.`,
      );
    } finally {
      vault.forget();
    }
  },
};

/** Re-keys with a progress bar on a terminal; shared with `members remove --rekey`. */
export async function rekeyVault(
  ctx: Context,
  client: CofferClient,
  project: string,
): Promise<{ epoch: number; versions: number }> {
  const progress = progressBar(!ctx.json && Boolean(process.stderr.isTTY));
  try {
    const result = await rekey(client, project, ctx.userKeys(), {
      pins: ctx.keyPins(client),
      onProgress: (p: { phase: string; done: number; total: number }) =>
        progress.update(p.phase, p.done, p.total),
    });
    progress.finish();
    if (!ctx.json) {
      note(`Re-keyed: epoch ${result.epoch}, ${result.versions} secret versions re-encrypted.`);
      const others = result.tokensCreatedByOthers ?? [];
      if (others.length > 0)
        note(
          `${others.length} token(s) created by someone else (${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}) now hold grants signed by you; their credentials refuse them if they name their creator's key: re-create those tokens.`,
        );
    }
    return result;
  } catch (err) {
    progress.finish();
    throw err;
  }
}

const rekeyCommand: Command = {
  name: 'vault rekey',
  summary: 'replace the vault key and re-encrypt every secret version (admins)',
  description:
    'Do this after removing a member who could read secrets: they may have kept a copy of the key. Every remaining member and token is granted the new key; history is re-encrypted too. Shows a progress bar on a terminal.',
  options: PROJECT_OPTION,
  async run({ values }) {
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    const result = await rekeyVault(ctx, client, project);
    if (ctx.json) printJson(result);
  },
};

export const commands: Command[] = [status, grant, rekeyCommand];
