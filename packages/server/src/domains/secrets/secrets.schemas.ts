import { Type, type Static } from 'typebox';
import { MAX_SECRET_ENVELOPE_LENGTH, SECRET_ENVELOPE_PATTERN } from '@coffer/sdk';
import { listQuerySchema } from '../../http/pagination.js';
import { Timestamp } from '../../http/schemas.js';
import { EnvironmentParams } from '../../http/params.js';

/** Environment-variable names: what `coffer run` can export to a process. */
const SECRET_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';
const MAX_SECRET_NAME_LENGTH = 256;
const MAX_COMMENT_LENGTH = 500;
export const MAX_BATCH_ITEMS = 1000;

const SecretName = Type.String({
  pattern: SECRET_NAME_PATTERN,
  minLength: 1,
  maxLength: MAX_SECRET_NAME_LENGTH,
  description: 'An environment-variable name: letters, digits and `_`, not starting with a digit',
});

/** The SDK's envelope; the server checks its shape and reads its epoch, never decrypts it. */
const SecretValue = Type.String({
  pattern: SECRET_ENVELOPE_PATTERN.source,
  maxLength: MAX_SECRET_ENVELOPE_LENGTH,
  description:
    'Ciphertext envelope `v1.xc20p.<epoch>.<nonce>.<ciphertext>` made by the SDK; its epoch must be the vault’s current epoch',
});

const Comment = Type.String({
  maxLength: MAX_COMMENT_LENGTH,
  description: 'Free text, ≤ 500 characters',
});
/**
 * The highest version number: versions are stored as 32-bit integers (the
 * `integer` of both databases), so a larger one is refused as invalid input.
 */
const MAX_VERSION = 2 ** 31 - 1;

const ExpectedVersion = Type.Integer({
  minimum: 0,
  maximum: MAX_VERSION,
  description:
    'Optimistic concurrency: the version you last saw (`0`: the secret must not exist yet). A mismatch is `409 version_conflict`.',
});

export const SecretParams = Type.Object({
  ...EnvironmentParams.properties,
  name: SecretName,
});

export const Secret = Type.Object(
  {
    id: Type.String({ description: '`sec_…`' }),
    environment_id: Type.String(),
    name: Type.String(),
    version: Type.Integer({ description: 'Starts at 1; every write adds one' }),
    value: Type.Optional(
      Type.String({
        description:
          'The envelope; present only for callers who may read values (admins, developers, tokens with a scope on the environment)',
      }),
    ),
    comment: Type.String(),
    created_at: Timestamp,
    updated_at: Timestamp,
    updated_by: Type.Union([Type.String(), Type.Null()], {
      description: 'User id of the last writer (for a token: the user accountable for it)',
    }),
  },
  { additionalProperties: false },
);

export const SecretVersion = Type.Object(
  {
    id: Type.String({ description: '`ver_…`' }),
    secret_id: Type.String(),
    version: Type.Integer(),
    value: Type.Optional(Type.String({ description: 'The envelope; only for readers' })),
    created_at: Timestamp,
    created_by: Type.Union([Type.String(), Type.Null()]),
  },
  { additionalProperties: false },
);

export const PutSecretBody = Type.Object(
  {
    value: SecretValue,
    comment: Type.Optional(Comment),
    expected_version: Type.Optional(ExpectedVersion),
  },
  { additionalProperties: false },
);

export const RollbackBody = Type.Object(
  {
    version: Type.Integer({
      minimum: 1,
      maximum: MAX_VERSION,
      description: 'The version whose value becomes current again',
    }),
    expected_version: Type.Optional(ExpectedVersion),
  },
  { additionalProperties: false },
);

export const BatchBody = Type.Object(
  {
    secrets: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: SecretName,
            value: SecretValue,
            comment: Type.Optional(Comment),
            expected_version: Type.Optional(ExpectedVersion),
          },
          { additionalProperties: false },
        ),
        { maxItems: MAX_BATCH_ITEMS },
      ),
    ),
    delete: Type.Optional(Type.Array(SecretName, { maxItems: MAX_BATCH_ITEMS })),
  },
  { additionalProperties: false },
);

export const BatchResult = Type.Object(
  {
    secrets: Type.Array(Secret, {
      description: 'The created and updated secrets, in request order',
    }),
    deleted: Type.Array(Type.String(), { description: 'Names deleted' }),
  },
  { additionalProperties: false },
);

const SECRET_SORTS = ['created_at', 'updated_at', 'name'] as const;
export type SecretSort = (typeof SECRET_SORTS)[number];
export const SecretListQuery = listQuerySchema(SECRET_SORTS, {});

const VERSION_SORTS = ['created_at', 'version'] as const;
export type VersionSort = (typeof VERSION_SORTS)[number];
export const VersionListQuery = listQuerySchema(VERSION_SORTS, {});

export const IfNoneMatchHeaders = Type.Object({
  'if-none-match': Type.Optional(
    Type.String({ description: 'An ETag from an earlier listing: `304` when nothing changed' }),
  ),
});

export type SecretObject = Static<typeof Secret>;
export type SecretVersionObject = Static<typeof SecretVersion>;
export type PutSecretInput = Static<typeof PutSecretBody>;
export type RollbackInput = Static<typeof RollbackBody>;
export type BatchInput = Static<typeof BatchBody>;
