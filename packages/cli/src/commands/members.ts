import {
  acceptInvitation,
  acceptWithIntroduction,
  changeMemberRole,
  declineInvitation,
  inviteMember,
  inviteWithIntroduction,
  parseIntroductionLink,
  isCofferApiError,
  isVaultError,
  listInvitations,
  liveTokensCreatedBy,
  listMembers,
  loadMembershipChain,
  removeMember,
  removeMemberSigned,
  updateMemberRole,
  type CofferClient,
  type MemberListItem,
  type MemberStatus,
  type VaultSession,
} from '@coffer/sdk';
import { PROJECT_OPTION, str, type Command, type Options } from '../cli/command.js';
import { CliError, UsageError } from '../cli/errors.js';
import { note, printJson, printLine, printTable, shortTime } from '../cli/output.js';
import { confirm, interactive } from '../cli/prompt.js';
import { Context } from '../context.js';
import { allPages, invitationToken, resolveId } from '../resolve.js';
import { inProject } from '../scope.js';
import { openProjectVault } from '../vault-access.js';

const ROLES = ['admin', 'developer', 'viewer'] as const;
type Role = (typeof ROLES)[number];

function role(value: string | undefined, command: string): Role {
  if (value === undefined) throw new UsageError('missing --role admin|developer|viewer', command);
  if (!(ROLES as readonly string[]).includes(value)) {
    throw new UsageError(`--role must be admin, developer or viewer, not "${value}"`, command);
  }
  return value as Role;
}

const ROLE_OPTION: Options = {
  role: { type: 'string', short: 'r', value: 'ROLE', description: 'admin, developer or viewer' },
};

/** Every member of the project (all pages). */
const allMembers = (client: CofferClient, project: string) =>
  allPages((page, per_page) => listMembers(client, project, { page, per_page }));

/** A member by `mbr_` id, `usr_` id or e-mail address. */
export async function findMember(
  client: CofferClient,
  project: string,
  ref: string,
): Promise<MemberListItem> {
  const wanted = ref.trim().toLowerCase();
  const member = (await allMembers(client, project)).find(
    (m) => m.id === ref || m.user.id === ref || m.user.email.toLowerCase() === wanted,
  );
  if (!member) throw new CliError('not_found', `no member "${ref}" in this project`);
  return member;
}

const list: Command = {
  name: 'members list',
  summary: "list the project's members and pending invitations",
  options: {
    ...PROJECT_OPTION,
    role: { type: 'string', value: 'ROLE', description: 'only members with this role' },
    status: {
      type: 'string',
      value: 'STATUS',
      description: 'only active, pending or revoked members',
    },
  },
  async run({ values }) {
    const { ctx, client, project } = await inProject(values);
    const filterRole = str(values, 'role');
    const status = str(values, 'status');
    const members = await allPages((page, per_page) =>
      listMembers(client, project, {
        page,
        per_page,
        ...(filterRole ? { role: filterRole as Role } : {}),
        ...(status ? { status: status as MemberStatus } : {}),
      }),
    );
    if (ctx.json) return printJson(members);
    printTable(
      ['id', 'email', 'name', 'role', 'status', 'since'],
      members.map((m) => [
        m.id,
        m.user.email,
        m.user.name,
        m.role,
        m.status,
        shortTime(m.joined_at ?? m.invited_at),
      ]),
    );
  },
};

const invite: Command = {
  name: 'members invite',
  summary: 'invite someone by e-mail (admins)',
  args: 'EMAIL',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    ...ROLE_OPTION,
    'no-introduction': {
      type: 'boolean',
      description: 'no introduction link (then granting needs a fingerprint comparison)',
    },
  },
  description: [
    'The server e-mails the invitee a link with a one-time token (a sign-up link without an',
    'account). Signed in with the vault key, you also get an INTRODUCTION LINK: pass it to',
    'them yourself (chat, in person), never through the server. Accepting with it',
    '(`coffer invitations accept --introduction LINK`) proves their keys, so `coffer vault',
    'grant EMAIL` needs no fingerprint comparison and refuses keys the server swapped in.',
  ].join('\n'),
  async run({ values, positionals }) {
    const r = role(str(values, 'role'), 'members invite');
    const { ctx, client, project } = await inProject(values);
    const email = positionals[0]!;
    if (ctx.token || values['no-introduction'] === true) {
      const member = await inviteMember(client, project, { email, role: r });
      if (ctx.json) return printJson(member);
      note(
        `Invited ${member.user.email} as ${member.role} (${member.id}); the invitation is pending until they accept it.`,
      );
      return;
    }
    const vault = await openProjectVault(ctx, client, project);
    try {
      if (!vault.holdsKeys) {
        const member = await inviteMember(client, project, { email, role: r });
        if (ctx.json) return printJson(member);
        note(
          `Invited ${member.user.email} as ${member.role} (${member.id}); no introduction link, as you hold no vault key: granting them will need a fingerprint comparison.`,
        );
        return;
      }
      const { member, introductionLink } = await inviteWithIntroduction(vault, email, r, {
        publicUrl: ctx.server(),
      });
      if (ctx.json) return printJson({ ...member, introduction_link: introductionLink });
      note(
        `Invited ${member.user.email} as ${member.role} (${member.id}); the invitation is pending until they accept it.`,
      );
      note(
        'Give them this introduction link yourself (not by e-mail through Coffer); they accept with `coffer invitations accept --introduction LINK`:',
      );
      printLine(introductionLink);
    } finally {
      vault.forget();
    }
  },
};

/**
 * A membership change made on the server and, when the caller can, signed
 * into the project's membership chain (`signed`, with the caller's vault
 * session). A caller who holds no project key (awaiting a grant) or uses a
 * token cannot sign: the server change is made alone (`plain`) and, when the
 * chain holds the member, a warning says the chain does not show it. When
 * signing is refused (`not_chain_admin`: the chain does not make the caller
 * admin), the error says that the server change was made.
 */
async function membershipChange<T>(
  ctx: Context,
  client: CofferClient,
  project: string,
  member: MemberListItem,
  what: string,
  signed: (vault: VaultSession) => Promise<T>,
  plain: () => Promise<T>,
): Promise<T> {
  const vault = await openProjectVault(ctx, client, project);
  try {
    const chained = vault.chain?.members.has(member.user.id) ?? false;
    if (ctx.token || !vault.holdsKeys) {
      const result = await plain();
      if (chained) {
        note(
          `coffer: warning: ${what} was made on the server but not signed into the project's membership chain (${ctx.token ? 'a token cannot sign it' : 'you hold no vault key yet'}): other members' clients still see ${member.user.email} as the chain says; an admin who holds the vault key signs it with the same command.`,
        );
      }
      return result;
    }
    try {
      return await signed(vault);
    } catch (err) {
      if (isVaultError(err, 'not_chain_admin')) {
        throw new CliError(
          'not_chain_admin',
          `${what} was made on the server, but not signed into the project's membership chain: ${err.message}`,
        );
      }
      throw err;
    }
  } finally {
    vault.forget();
  }
}

const setRole: Command = {
  name: 'members set-role',
  summary: "change a member's role (admins)",
  args: 'MEMBER ROLE',
  positionals: [2, 2],
  options: PROJECT_OPTION,
  description: [
    'MEMBER is a member id (mbr_…), a user id (usr_…) or an e-mail address. When the member',
    "is in the project's signed membership chain, your client signs the change into it (a",
    "promotion to admin counts for other members' clients only once signed); that needs you",
    'to be an admin of the chain (not_chain_admin otherwise) holding the vault key. Without',
    'the key the change is made on the server only, with a warning.',
  ].join('\n'),
  async run({ values, positionals }) {
    const r = role(positionals[1], 'members set-role');
    const { ctx, client, project } = await inProject(values);
    const member = await findMember(client, project, positionals[0]!);
    const updated = await membershipChange(
      ctx,
      client,
      project,
      member,
      `the role change of ${member.user.email}`,
      (vault) => changeMemberRole(vault, member.id, r),
      () => updateMemberRole(client, project, member.id, r),
    );
    if (ctx.json) return printJson(updated);
    note(`${updated.user.email} is now ${updated.role}.`);
    if (r !== 'viewer' && member.role === 'viewer') {
      note(
        `They need the vault key to read secrets: \`coffer vault grant ${updated.user.email}\`.`,
      );
    }
  },
};

const remove: Command = {
  name: 'members remove',
  summary: 'remove a member or withdraw an invitation (admins)',
  args: 'MEMBER',
  positionals: [1, 1],
  options: {
    ...PROJECT_OPTION,
    rekey: {
      type: 'boolean',
      description: 're-key the vault right after the removal (for scripts)',
    },
  },
  description:
    "MEMBER is a member id (mbr_…), a user id (usr_…) or an e-mail address. When the member is in the project's signed membership chain, your client signs their removal into it, so no client accepts a grant to or from them after (you must be an admin of the chain holding the vault key; without the key the removal is made on the server only, with a warning). The API keys and CI tokens they created are revoked with them; the output names them (`revoked_credentials` with --json). A removed member who could read secrets may have kept a copy of the vault key: re-key afterwards (offered on a terminal; --rekey in scripts) so nothing written from now on, and nothing stored, opens with it.",
  async run({ values, positionals }) {
    const { ctx, client, project } = await inProject(values);
    const member = await findMember(client, project, positionals[0]!);
    // Listed before: the removal revokes them, and a revoked token is no longer "theirs" to find.
    // A pending invitee has none (their earlier tokens went when they were removed before).
    const { apiKeys, ciTokens } =
      member.status === 'pending'
        ? { apiKeys: [], ciTokens: [] }
        : await liveTokensCreatedBy(client, project, member.user.id);
    await membershipChange(
      ctx,
      client,
      project,
      member,
      `the removal of ${member.user.email}`,
      (vault) => removeMemberSigned(vault, { memberId: member.id, userId: member.user.id }),
      () => removeMember(client, project, member.id),
    );
    const hadAccess = member.status === 'active' && member.role !== 'viewer';
    if (!ctx.json) {
      note(`Removed ${member.user.email} (${member.id}).`);
      const revoked = [
        ...apiKeys.map((key) => `${key.id}  API key "${key.name}"`),
        ...ciTokens.map((token) => `${token.id}  CI token "${token.name}"`),
      ];
      if (revoked.length)
        note(
          `Revoked with them; whatever runs with these stops working:\n  ${revoked.join('\n  ')}`,
        );
    }
    let rekeyed = false;
    if (
      values.rekey === true ||
      (hadAccess &&
        !ctx.json &&
        interactive() &&
        (await confirm('They could read secrets. Re-key the vault now?')))
    ) {
      const { rekeyVault } = await import('./vault.js');
      await rekeyVault(ctx, client, project);
      rekeyed = true;
    } else if (hadAccess && !ctx.json) {
      note('They could read secrets: re-key the vault with `coffer vault rekey`.');
    }
    if (ctx.json)
      printJson({
        removed: member.id,
        revoked_credentials: [...apiKeys, ...ciTokens].map((token) => token.id),
        rekeyed,
        rekey_recommended: hadAccess && !rekeyed,
      });
  },
};

const invitations: Command = {
  name: 'invitations list',
  summary: 'your pending invitations',
  async run({ values }) {
    const ctx = new Context(values);
    const client = await ctx.userClient();
    const items = await allPages((page, per_page) => listInvitations(client, { page, per_page }));
    if (ctx.json) return printJson(items);
    printTable(
      ['id', 'project', 'role', 'invited', 'expires'],
      items.map((i) => [
        i.id,
        i.project.name,
        i.role,
        shortTime(i.invited_at),
        shortTime(i.expires_at),
      ]),
      'No pending invitations.',
    );
  },
};

const accept: Command = {
  name: 'invitations accept',
  summary: 'accept an invitation (then an admin grants you the vault key)',
  args: '[INVITATION]',
  positionals: [0, 1],
  description:
    'INVITATION is the id from `coffer invitations list` (mbr_…) or the project name; with --introduction it may be left out. Until your e-mail address is verified (you signed up without an invitation link), pass the token (--token) or the link (--invitation) from the invitation e-mail: it proves the address. --introduction LINK: the introduction link your inviter gave you; it proves your keys to the project’s admins, and checks and pins your inviter’s keys. Once joined, it prints the project’s fingerprint (the root of its signed membership chain, pinned from now on): compare it with your inviter if you wish.',
  options: {
    introduction: {
      type: 'string',
      value: 'LINK',
      description: 'the introduction link (…/invite?member=…#k=…) your inviter gave you',
    },
    token: {
      type: 'string',
      value: 'TOKEN',
      description: 'the token from the invitation e-mail (as the e-mail shows it)',
    },
    invitation: {
      type: 'string',
      value: 'LINK',
      description: 'or the whole link from the invitation e-mail',
    },
  },
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const client = await ctx.userClient();
    const introduction = str(values, 'introduction');
    let linked: string | undefined;
    if (introduction !== undefined) {
      try {
        linked = parseIntroductionLink(introduction).memberId;
      } catch (err) {
        throw new CliError('invalid_introduction', (err as Error).message);
      }
    }
    if (positionals[0] === undefined && linked === undefined) {
      throw new UsageError('missing the invitation (or --introduction LINK)', 'invitations accept');
    }
    const id = positionals[0] === undefined ? linked! : await invitationId(client, positionals[0]);
    if (linked !== undefined && linked !== id) {
      throw new CliError(
        'invalid_introduction',
        `the introduction link is for invitation ${linked}, not ${id}`,
      );
    }
    const token = invitationToken(str(values, 'token') ?? str(values, 'invitation'));
    let member;
    let inviterVerified = false;
    let projectVerified = false;
    let projectFingerprint: string | null;
    try {
      const pins = await ctx.keyPins(client);
      if (introduction !== undefined) {
        const session = ctx.requireSession();
        const result = await acceptWithIntroduction(
          client,
          { userId: session.user.id, keys: ctx.userKeys() },
          introduction,
          { ...(token !== undefined ? { token } : {}), pins },
        );
        member = result.member;
        inviterVerified = result.inviterVerified;
        projectVerified = result.projectVerified;
        projectFingerprint = result.projectFingerprint;
      } else {
        member = await acceptInvitation(client, id, token);
        // A member now: the chain is readable; its root is pinned at join.
        const chain = await loadMembershipChain(client, member.project_id, { pins });
        projectFingerprint = chain?.fingerprint ?? null;
      }
    } catch (err) {
      if (isCofferApiError(err, 'forbidden') && err.details.some((d) => d.field === 'token')) {
        throw new CliError(
          'invitation_token_required',
          `${err.message}: pass the token from the invitation e-mail, \`coffer invitations accept ${positionals[0] ?? id} --token TOKEN\``,
        );
      }
      throw err;
    }
    if (ctx.json)
      return printJson({
        ...member,
        ...(introduction !== undefined ? { inviter_verified: inviterVerified } : {}),
        project_fingerprint: projectFingerprint,
        project_verified: projectVerified,
      });
    note(`Joined project ${member.project_id} as ${member.role}.`);
    if (inviterVerified) note('Your inviter’s keys matched the introduction link and are pinned.');
    if (projectFingerprint !== null) {
      note(
        projectVerified
          ? `Project fingerprint: ${projectFingerprint} (it matched the introduction link; your client pinned it and refuses another project chain under this id).`
          : `Project fingerprint: ${projectFingerprint}. Nothing from your inviter vouched for it (you joined without the introduction link): compare it with them out of band. Your client pinned it and refuses another project chain under this id.`,
      );
    } else {
      note(
        'The project has no signed membership chain yet: an admin who holds the vault key signs one with `coffer vault chain sign`.',
      );
    }
    if (member.role !== 'viewer') {
      note(
        'An admin must now grant you the vault key (`coffer vault grant`) before you can read secrets.',
      );
    }
  },
};

const decline: Command = {
  name: 'invitations decline',
  summary: 'decline an invitation',
  args: 'INVITATION',
  positionals: [1, 1],
  async run({ values, positionals }) {
    const ctx = new Context(values);
    const client = await ctx.userClient();
    const id = await invitationId(client, positionals[0]!);
    await declineInvitation(client, id);
    if (ctx.json) return printJson({ declined: id });
    note('Invitation declined.');
  },
};

/** An invitation by its id (`mbr_…`), its project's name or its project's id. */
const invitationId = (client: CofferClient, ref: string) =>
  resolveId(
    ref,
    'mbr_',
    'pending invitation',
    () => allPages((page, per_page) => listInvitations(client, { page, per_page })),
    (i) => [i.project.name, i.project.id],
  );

export const commands: Command[] = [list, invite, setRole, remove, invitations, accept, decline];
