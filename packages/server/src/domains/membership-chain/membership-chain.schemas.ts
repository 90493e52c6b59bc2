import { Type } from 'typebox';
import { idPattern } from '../../ids.js';
import { DataEnvelope } from '../../http/schemas.js';
import { PublicKey, Signature } from '../vault/vault.schemas.js';

const Role = Type.Union([Type.Literal('admin'), Type.Literal('developer'), Type.Literal('viewer')]);

const MembershipStatement = Type.Object(
  {
    project_id: Type.String({ pattern: idPattern('project') }),
    seq: Type.Integer({ minimum: 0, maximum: 99_999 }),
    prev: Type.String({
      pattern: '^(?:[A-Za-z0-9_-]{43})?$',
      description: 'Link hash of the statement before (base64url, 32 bytes); empty for the root',
    }),
    kind: Type.Union([
      Type.Literal('root'),
      Type.Literal('add'),
      Type.Literal('role'),
      Type.Literal('remove'),
    ]),
    user_id: Type.String({ pattern: idPattern('user') }),
    public_key: PublicKey,
    signing_public_key: PublicKey,
    role: Type.Union([Role, Type.Null()], { description: 'null exactly for `remove`' }),
    signer_id: Type.String({ pattern: idPattern('user') }),
    at: Type.String({ minLength: 1, maxLength: 40 }),
    signature: Signature,
  },
  {
    additionalProperties: false,
    description:
      'One signed fact of the project’s membership (see the SDK’s CRYPTO.md, “Membership chain”)',
  },
);

export const MembershipChainResponse = DataEnvelope(
  Type.Object({ statements: Type.Array(MembershipStatement) }, { additionalProperties: false }),
);

export const AppendStatementsBody = Type.Object(
  { statements: Type.Array(MembershipStatement, { minItems: 1, maxItems: 100 }) },
  { additionalProperties: false },
);

export const AppendStatementsResponse = DataEnvelope(
  Type.Object(
    {
      length: Type.Integer({ description: 'Statements in the chain now' }),
      head: Type.String({ description: 'Link hash of the last statement' }),
      fingerprint: Type.String({ description: 'The project’s fingerprint (its root’s link hash)' }),
    },
    { additionalProperties: false },
  ),
);
