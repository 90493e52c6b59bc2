import { Type, type Static } from 'typebox';
import { MAX_OVERRIDE_ENVELOPE_LENGTH, OVERRIDE_ENVELOPE_PATTERN } from '@coffer/sdk';
import { listQuerySchema } from '../../http/pagination.js';
import { Timestamp } from '../../http/schemas.js';
import { EnvironmentParams, ProjectRefParams } from '../../http/params.js';

const OVERRIDE_SORTS = ['created_at', 'updated_at', 'name'] as const;

const OverrideName = Type.String({
  pattern: '^[A-Za-z_][A-Za-z0-9_]*$',
  minLength: 1,
  maxLength: 256,
  description: 'The secret name it overrides (it need not exist in the environment)',
});

export const OverrideParams = Type.Object({
  ...EnvironmentParams.properties,
  name: OverrideName,
});

export const MemberOverridesParams = Type.Object({
  ...ProjectRefParams.properties,
  member_id: Type.String({ minLength: 1, maxLength: 64, description: 'Member id, `mbr_…`' }),
});

export const PutOverrideBody = Type.Object(
  {
    value: Type.String({
      pattern: OVERRIDE_ENVELOPE_PATTERN.source,
      maxLength: MAX_OVERRIDE_ENVELOPE_LENGTH,
      description:
        'Envelope `v1.ov.<nonce>.<ciphertext>` made by the SDK under a key derived from your own X25519 private key; the server cannot open it',
    }),
  },
  { additionalProperties: false },
);

/** One of your own overrides, with its envelope. */
export const Override = Type.Object(
  {
    id: Type.String({ description: '`ovr_…`' }),
    environment_id: Type.String(),
    name: Type.String(),
    value: Type.String({ description: 'The envelope as your client stored it' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

/** What admins see of a member's overrides: which names, never a value. */
export const OverrideName_ = Type.Object(
  {
    environment_id: Type.String(),
    environment_slug: Type.String(),
    name: Type.String(),
    updated_at: Timestamp,
  },
  { additionalProperties: false },
);

export const OverrideListQuery = listQuerySchema(OVERRIDE_SORTS, {
  environment: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 64,
      description: 'Only this environment (id or slug)',
    }),
  ),
});
export const MemberOverrideListQuery = listQuerySchema(OVERRIDE_SORTS, {});

export type OverrideSort = (typeof OVERRIDE_SORTS)[number];
export type OverrideObject = Static<typeof Override>;
export type OverrideNameObject = Static<typeof OverrideName_>;
