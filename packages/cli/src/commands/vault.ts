import {
  fingerprint,
  loadMembershipChain,
  grantMember,
  isVaultError,
  listMembers,
  pendingGrants,
  ready,
  rekey,
  signMembershipChain,
  vouchFor,
  type ChainCandidate,
  type CofferClient,
  type PendingGrant,
  type VouchedBy,
} from '@coffer/sdk';
import { PROJECT_OPTION, str, type Command } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson, printLine, printTable, shortTime } from '../cli/output.js';
import { progressBar } from '../cli/progress.js';
import { confirm, interactive } from '../cli/prompt.js';
import type { Context } from '../context.js';
import { allPages } from '../resolve.js';
import { inProject } from '../scope.js';
import { openProjectVault, tokenParts } from '../vault-access.js';

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
    const projectFingerprint = vault.projectFingerprint;
    vault.forget();
    if (ctx.json) {
      return printJson({
        project_id: s.project_id,
        project_fingerprint: projectFingerprint,
        epoch: s.epoch,
        initialized: s.initialized,
        rekey_recommended: s.rekey_recommended,
        holds_keys: holdsKeys,
        ...(s.pending_grants ? { pending_grants: s.pending_grants } : {}),
      });
    }
    printLine(`Project:           ${s.project_id}`);
    printLine(
      `Fingerprint:       ${projectFingerprint ?? 'none: no signed membership chain yet (coffer vault chain sign)'}`,
    );
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
          `${others.length} token(s) created by someone else (${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}) now hold grants signed by you. Credentials made since the project has a signed membership chain accept them; those made before, which name only their creator's key, refuse them: re-create those.`,
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

/** What the caller's key pins say of a key holder about to be signed into a new chain. */
const PINNED: Record<ChainCandidate['pinned'], string> = {
  self: 'you',
  verified: 'verified (compared or introduced)',
  tofu: 'pinned on first use, never compared',
  new: 'new to you: compare before signing',
};

/** Prints the project's chain, verified here (against the pinned root, or the token's). */
async function showChain(ctx: Context, client: CofferClient, project: string): Promise<void> {
  await ready();
  const [pins, root] = await Promise.all([
    ctx.token ? undefined : ctx.keyPins(client),
    ctx.token ? tokenParts(ctx).then((p) => p.chainRoot) : null,
  ]);
  const [state, members] = await Promise.all([
    loadMembershipChain(client, project, { ...(pins ? { pins } : {}), root }),
    allPages((page, per_page) => listMembers(client, project, { page, per_page })),
  ]);
  const statements = state?.statements ?? [];
  // Members' addresses from the members list; those no longer members (removed) from your pins.
  const emails = new Map<string, string>();
  for (const p of pins?.list() ?? []) if (p.email) emails.set(p.user_id, p.email);
  for (const m of members) emails.set(m.user.id, m.user.email);
  const email = (userId: string) => emails.get(userId) ?? null;
  if (ctx.json) {
    return printJson({
      project_id: project,
      fingerprint: state?.fingerprint ?? null,
      root: state?.root ?? null,
      head: state?.head ?? null,
      length: state?.length ?? 0,
      statements: statements.map((s) => ({
        seq: s.seq,
        kind: s.kind,
        user_id: s.user_id,
        email: email(s.user_id),
        role: s.role,
        key_fingerprint: fingerprint(s.public_key, s.signing_public_key),
        signer_id: s.signer_id,
        signer_email: email(s.signer_id),
        at: s.at,
      })),
      members: [...(state?.members.values() ?? [])].map((m) => ({
        user_id: m.user_id,
        email: email(m.user_id),
        role: m.role,
        key_fingerprint: fingerprint(m.public_key, m.signing_public_key),
      })),
    });
  }
  if (!state) {
    printLine(`Project ${project} has no signed membership chain yet.`);
    note(
      'An admin who holds the vault key signs one with `coffer vault chain sign`, after checking the members it lists.',
    );
    return;
  }
  printLine(`Project:      ${project}`);
  printLine(`Fingerprint:  ${state.fingerprint}`);
  printLine(`Statements:   ${state.length} (verified)`);
  printLine('');
  printTable(
    ['seq', 'kind', 'member', 'role', 'signed by', 'date'],
    statements.map((s) => [
      s.seq,
      s.kind,
      email(s.user_id) ?? s.user_id,
      s.role,
      email(s.signer_id) ?? s.signer_id,
      shortTime(s.at),
    ]),
  );
}

/** Signs the first chain of a project created before chains, after the caller checked its key holders. */
async function signChain(
  ctx: Context,
  client: CofferClient,
  project: string,
  yes: boolean,
): Promise<void> {
  const self = ctx.requireSession().user.id;
  const [vault, members] = await Promise.all([
    openProjectVault(ctx, client, project, { quietUnchained: true }),
    allPages((page, per_page) => listMembers(client, project, { page, per_page })),
  ]);
  try {
    // Asked before the list is shown: the server takes statements from admins only.
    const role = members.find((m) => m.user.id === self)?.role;
    if (role !== 'admin') {
      throw new CliError(
        'forbidden',
        `only an admin of the project signs its membership chain (you are ${role ?? 'no member'})`,
      );
    }
    const state = await signMembershipChain(vault, async (candidates) => {
      const width = Math.max(...candidates.map((c) => c.email.length));
      note(
        [
          `Signing the membership chain of project ${project} vouches for these key holders and their keys:`,
          ...candidates.map(
            (c) =>
              `  ${c.email.padEnd(width)}  ${c.role.padEnd(9)}  ${c.fingerprint}  ${PINNED[c.pinned]}`,
          ),
          'Compare the fingerprints of those not verified with them (they see theirs with `coffer whoami`).',
        ].join('\n'),
      );
      if (yes) return true;
      if (!interactive()) {
        throw new CliError(
          'confirmation_required',
          'signing the membership chain vouches for these members’ keys: check them, then pass --yes',
        );
      }
      if (!(await confirm('Sign them into the project’s membership chain?'))) {
        throw new CliError('cancelled', 'not signed');
      }
      return true;
    });
    if (ctx.json) {
      return printJson({
        project_id: project,
        fingerprint: state?.fingerprint ?? null,
        length: state?.length ?? 0,
      });
    }
    note(`Signed the membership chain of project ${project}: ${state?.length ?? 0} statements.`);
    printLine(`Project fingerprint: ${state?.fingerprint ?? '-'}`);
  } finally {
    vault.forget();
  }
}

const chain: Command = {
  name: 'vault chain',
  summary: "show the project's signed membership chain; `vault chain sign` gives it one (admins)",
  args: '[sign]',
  positionals: [0, 1],
  description: [
    "Every fact that decides who may hold the project's key is a statement signed by an admin's",
    'client: the creator’s root, then each member added (when granted the key), role changes',
    'and removals. Your client checks the whole chain here and whenever it opens the vault:',
    'it accepts your grant only from someone the chain made admin, and refuses a chain that',
    'does not verify (chain_invalid) or that differs from the one it pinned (chain_changed,',
    'chain_rollback). `coffer vault chain` prints the project’s fingerprint (the root’s:',
    'compare it with the other members if you wish) and every statement.',
    '',
    '`coffer vault chain sign` gives a project created before chains its chain: it lists the',
    'members who hold the vault key with their key fingerprints and what your key pins say of',
    'them, asks (or --yes), then signs you as its root and them as members, with the keys',
    'shown. Compare the fingerprints of members not verified first. Admins holding the key.',
  ].join('\n'),
  options: {
    ...PROJECT_OPTION,
    yes: {
      type: 'boolean',
      short: 'y',
      description: 'with sign: sign without asking (needed without a terminal)',
    },
  },
  async run({ values, positionals }) {
    const action = positionals[0];
    if (action !== undefined && action !== 'sign') {
      throw new UsageError(`unknown action "${action}" (only sign)`, 'vault chain');
    }
    if (action === undefined) {
      const { ctx, client, project } = await inProject(values);
      return showChain(ctx, client, project);
    }
    const { ctx, client, project } = await inProject(values, { userOnly: true });
    await signChain(ctx, client, project, values.yes === true);
  },
};

export const commands: Command[] = [status, grant, rekeyCommand, chain];
