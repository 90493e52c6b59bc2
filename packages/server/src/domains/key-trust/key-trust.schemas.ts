import { Type } from 'typebox';
import { INTRODUCTION_PROOF_PATTERN, SEALED_INTRODUCTION_PATTERN } from '@coffer/sdk';
import { idPattern } from '../../ids.js';
import { DataEnvelope } from '../../http/schemas.js';
import { PublicKey, Signature } from '../vault/vault.schemas.js';

const SealedIntroduction = Type.String({
  pattern: SEALED_INTRODUCTION_PATTERN.source,
  description:
    'The introduction secret sealed for the project’s admins, `v1.<epoch>.<nonce>.<ciphertext>` (see the SDK’s CRYPTO.md)',
});
const IntroductionProof = Type.String({
  pattern: INTRODUCTION_PROOF_PATTERN.source,
  description: 'HMAC-SHA-256 under the introduction secret, base64url (32 bytes)',
});

export const IntroductionParams = Type.Object(
  {
    project_id: Type.String({ pattern: idPattern('project') }),
    member_id: Type.String({ pattern: idPattern('member') }),
  },
  { additionalProperties: false },
);

export const IntroductionBody = Type.Object(
  { sealed_secret: SealedIntroduction, inviter_proof: IntroductionProof },
  { additionalProperties: false },
);

const KeyPin = Type.Object(
  {
    user_id: Type.String({ minLength: 1, maxLength: 64 }),
    email: Type.String({ maxLength: 254 }),
    public_key: PublicKey,
    signing_public_key: PublicKey,
    status: Type.Union([Type.Literal('tofu'), Type.Literal('verified')]),
    at: Type.String({ maxLength: 40 }),
  },
  { additionalProperties: false },
);

const ProjectPin = Type.Object(
  {
    project_id: Type.String({ minLength: 1, maxLength: 64 }),
    root: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' }),
    seq: Type.Integer({ minimum: 0, maximum: 2 ** 31 - 1 }),
    head: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' }),
    at: Type.String({ maxLength: 40 }),
  },
  {
    additionalProperties: false,
    description:
      'A project’s membership chain as the owner last saw it: its root and its head at `seq`',
  },
);

const KeyPinsDocument = Type.Object(
  {
    user_id: Type.String(),
    version: Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 }),
    pins: Type.Array(KeyPin, { maxItems: 10_000 }),
    projects: Type.Optional(Type.Array(ProjectPin, { maxItems: 10_000 })),
  },
  { additionalProperties: false },
);

export const PutKeyPinsBody = Type.Object(
  { document: KeyPinsDocument, signature: Signature },
  { additionalProperties: false },
);

export const KeyPinsResponse = DataEnvelope(
  Type.Object(
    {
      version: Type.Integer({ description: '0 when nothing is stored yet' }),
      document: Type.Union([KeyPinsDocument, Type.Null()]),
      signature: Type.Union([Type.String(), Type.Null()]),
    },
    { additionalProperties: false },
  ),
);

export const MemberKeysResponse = DataEnvelope(
  Type.Array(
    Type.Object(
      {
        member_id: Type.String(),
        user_id: Type.String(),
        email: Type.String(),
        name: Type.String(),
        role: Type.Union([Type.Literal('admin'), Type.Literal('developer')]),
        public_key: Type.String(),
        signing_public_key: Type.String(),
        fingerprint: Type.String(),
      },
      { additionalProperties: false },
    ),
  ),
);
