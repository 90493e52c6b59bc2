import { Type } from 'typebox';
import {
  KEY_32_PATTERN,
  MAX_SECRET_ENVELOPE_LENGTH,
  SEALED_KEY_PATTERN,
  SEALED_INTRODUCTION_PATTERN,
  SECRET_ENVELOPE_PATTERN,
  SIGNATURE_PATTERN,
} from '@coffer/sdk';
import { idPattern } from '../../ids.js';
import { DataEnvelope, Nullable, Timestamp } from '../../http/schemas.js';

// ---- shared with the tokens domain -----------------------------------------

export const PublicKey = Type.String({
  pattern: KEY_32_PATTERN.source,
  description: '32-byte public key, base64url without padding',
});
const SealedKey = Type.String({
  pattern: SEALED_KEY_PATTERN.source,
  description: 'crypto_box_seal of the 32-byte key to the recipient, base64url (80 bytes)',
});
export const Signature = Type.String({
  pattern: SIGNATURE_PATTERN.source,
  description: "Ed25519 signature by the granter over the grant's binding, base64url (64 bytes)",
});
const Epoch = Type.Integer({ minimum: 1, maximum: 2 ** 31 - 1 });
const Envelope = Type.String({
  pattern: SECRET_ENVELOPE_PATTERN.source,
  maxLength: MAX_SECRET_ENVELOPE_LENGTH,
  description: 'Encrypted secret value `v1.xc20p.<epoch>.<nonce>.<ciphertext>`',
});
const EnvironmentId = Type.String({ pattern: idPattern('environment') });
const UserId = Type.String({ pattern: idPattern('user') });
/** An API key (`key_`) or CI token (`cit_`) id. */
const TokenId = Type.String({
  pattern: `(${idPattern('apiKey')})|(${idPattern('ciToken')})`,
});

/** An environment-key grant for a token, as a client uploads it (the recipient is implied or given). */
export const EnvironmentGrantInput = Type.Object(
  { environment_id: EnvironmentId, epoch: Epoch, sealed_key: SealedKey, signature: Signature },
  { additionalProperties: false },
);

/** A stored grant as its recipient reads it: everything `openGrant` in the SDK needs. */
const GrantView = Type.Object(
  {
    id: Type.String(),
    kind: Type.Union([Type.Literal('project_key'), Type.Literal('environment_key')]),
    project_id: Type.String(),
    epoch: Type.Integer(),
    environment_id: Nullable(Type.String()),
    recipient_type: Type.Union([
      Type.Literal('user'),
      Type.Literal('api_key'),
      Type.Literal('ci_token'),
    ]),
    recipient_id: Type.String(),
    sealed_key: Type.String(),
    granter_id: Type.String(),
    granter_signing_public_key: Nullable(Type.String()),
    granter_public_key: Nullable(
      Type.String({ description: 'A user granter’s X25519 key (null for an API key)' }),
    ),
    granter_email: Nullable(
      Type.String({ description: 'A user granter’s e-mail (null for an API key)' }),
    ),
    signature: Type.String(),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);

// ---- GET /vault -------------------------------------------------------------

const MemberKeys = {
  user_id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  role: Type.Union([Type.Literal('admin'), Type.Literal('developer')]),
  public_key: Type.String(),
  signing_public_key: Type.String(),
  fingerprint: Type.String({
    description: 'Compare out of band before granting: 5 groups of 8 hex digits',
  }),
};

const PendingGrant = Type.Object(
  {
    member_id: Type.String(),
    ...MemberKeys,
    introduction: Type.Optional(
      Type.Object(
        {
          sealed_secret: Type.String({
            description: 'The introduction secret sealed for admins (open it with the project key)',
          }),
          proof: Nullable(
            Type.String({
              description:
                'The invitee’s MAC over its keys under that secret; null when they accepted without the introduction link',
            }),
          ),
        },
        {
          additionalProperties: false,
          description:
            'Only when the inviter stored an introduction: check `proof` against the keys above before granting',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const VaultStatus = DataEnvelope(
  Type.Object(
    {
      project_id: Type.String(),
      epoch: Type.Integer({ description: 'Current key epoch; 0 until the vault is initialised' }),
      initialized: Type.Boolean(),
      rekey_recommended: Type.Boolean(),
      recipient: Type.Object(
        {
          type: Type.Union([
            Type.Literal('user'),
            Type.Literal('api_key'),
            Type.Literal('ci_token'),
          ]),
          id: Type.String(),
        },
        { additionalProperties: false, description: 'Who the grants below are addressed to' },
      ),
      grants: Type.Array(GrantView, {
        description:
          "The caller's own grants at the current epoch: a member's project-key grant, a token's environment-key grants (one per environment in scope); empty for viewers",
      }),
      pending_grants: Type.Optional(
        Type.Array(PendingGrant, {
          description: 'Admins only: active admins and developers without a grant for this epoch',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

// ---- POST /vault/grants -------------------------------------------------------

export const GrantsBody = Type.Object(
  {
    grants: Type.Array(
      Type.Object(
        { recipient_id: UserId, epoch: Epoch, sealed_key: SealedKey, signature: Signature },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 100 },
    ),
  },
  { additionalProperties: false },
);

export const GrantsResult = DataEnvelope(
  Type.Object(
    {
      epoch: Type.Integer(),
      grants: Type.Array(
        Type.Object(
          { id: Type.String(), recipient_id: Type.String(), epoch: Type.Integer() },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

// ---- GET /vault/snapshot ------------------------------------------------------

const Scopes = Type.Record(
  Type.String(),
  Type.Union([Type.Literal('read'), Type.Literal('read_write')]),
);

export const Snapshot = DataEnvelope(
  Type.Object(
    {
      project_id: Type.String(),
      epoch: Type.Integer(),
      environments: Type.Array(
        Type.Object(
          { id: Type.String(), name: Type.String(), slug: Type.String() },
          { additionalProperties: false },
        ),
      ),
      versions: Type.Array(
        Type.Object(
          {
            id: Type.String(),
            secret_id: Type.String(),
            environment_id: Type.String(),
            name: Type.String(),
            version: Type.Integer(),
            epoch: Type.Integer(),
            value: Type.String(),
          },
          { additionalProperties: false },
        ),
        { description: 'Every stored version of every secret, history included' },
      ),
      members: Type.Array(
        Type.Object(
          {
            ...MemberKeys,
            grant: Type.Object(
              {
                epoch: Type.Integer(),
                sealed_key: Type.String(),
                signature: Type.String(),
                granter_id: Type.String(),
                granter_signing_public_key: Nullable(Type.String()),
                granter_public_key: Nullable(Type.String()),
                granter_email: Nullable(Type.String()),
              },
              {
                additionalProperties: false,
                description:
                  'Their project-key grant at the current epoch, with the granter’s keys: the re-keying client checks it against the keys shown for the member and refuses a member whose keys changed since',
              },
            ),
          },
          { additionalProperties: false },
        ),
        {
          description:
            'Every member who holds the project key at the current epoch and must receive the new one; members still awaiting a grant are left out and stay pending',
        },
      ),
      introductions: Type.Array(
        Type.Object(
          { member_id: Type.String(), user_id: Type.String(), sealed_secret: Type.String() },
          { additionalProperties: false },
        ),
        {
          description:
            'Introduction secrets sealed under the current epoch (pending and active members): re-seal each under the new epoch in `introductions` of the re-key',
        },
      ),
      api_keys: Type.Array(
        Type.Object(
          {
            id: Type.String(),
            name: Type.String(),
            role: Type.String(),
            scopes: Scopes,
            public_key: Type.String(),
            expires_at: Nullable(Type.String()),
            created_by: Type.String({ description: 'The user who created it' }),
          },
          { additionalProperties: false },
        ),
      ),
      ci_tokens: Type.Array(
        Type.Object(
          {
            id: Type.String(),
            name: Type.String(),
            scopes: Scopes,
            public_key: Type.String(),
            expires_at: Type.String(),
            created_by: Type.String({
              description: 'The user or API key (key_…) that minted it',
            }),
          },
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false },
  ),
);

// ---- POST /vault/re-key -------------------------------------------------------

export const RekeyBody = Type.Object(
  {
    from_epoch: Epoch,
    versions: Type.Array(
      Type.Object(
        { id: Type.String({ pattern: idPattern('secretVersion') }), value: Envelope },
        { additionalProperties: false },
      ),
      { maxItems: 1_000_000 },
    ),
    grants: Type.Array(
      Type.Object(
        { recipient_id: UserId, epoch: Epoch, sealed_key: SealedKey, signature: Signature },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 10_000 },
    ),
    token_grants: Type.Array(
      Type.Object(
        {
          recipient_id: TokenId,
          environment_id: EnvironmentId,
          epoch: Epoch,
          sealed_key: SealedKey,
          signature: Signature,
        },
        { additionalProperties: false },
      ),
      { maxItems: 100_000 },
    ),
    introductions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            member_id: Type.String({ pattern: idPattern('member') }),
            sealed_secret: Type.String({ pattern: SEALED_INTRODUCTION_PATTERN.source }),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: 10_000,
          description:
            'Every introduction of the snapshot re-sealed under the new epoch (409 when one is missing or extra). Left out, the stored introductions are dropped: those members then need a fingerprint comparison',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const RekeyResult = DataEnvelope(
  Type.Object(
    {
      epoch: Type.Integer(),
      versions: Type.Integer(),
      grants: Type.Integer(),
      token_grants: Type.Integer(),
    },
    { additionalProperties: false },
  ),
);
