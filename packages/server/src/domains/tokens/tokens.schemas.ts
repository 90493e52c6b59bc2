import { Type } from 'typebox';
import { idPattern } from '../../ids.js';
import { listQuerySchema } from '../../http/pagination.js';
import { DataEnvelope, ListEnvelope, Nullable, Timestamp } from '../../http/schemas.js';
import { EnvironmentGrantInput, PublicKey } from '../vault/vault.schemas.js';

const Role = Type.Union([Type.Literal('admin'), Type.Literal('developer'), Type.Literal('viewer')]);
const Scope = Type.Union([Type.Literal('read'), Type.Literal('read_write')]);

/** Request scopes: environment id or slug → access. Responses always use ids. */
const scopesInput = (minProperties: number) =>
  Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Scope, {
    minProperties,
    maxProperties: 100,
    description: 'Environment id or slug → `read` | `read_write`',
  });
const Scopes = Type.Record(Type.String(), Scope, {
  description: 'Environment id → `read` | `read_write`',
});

const Name = Type.String({ minLength: 1, maxLength: 100 });

/** The token's public keys (X25519, Ed25519), both derived from the key part the server never sees. */
const KeyMaterial = {
  public_key: PublicKey,
  signing_public_key: PublicKey,
  grants: Type.Array(EnvironmentGrantInput, {
    maxItems: 100,
    description:
      'One environment-key grant per scoped environment at the current epoch, sealed to `public_key` and signed by the creator (a member’s signing key, or the minting API key’s)',
  }),
};

export const TokenParams = (kind: 'apiKey' | 'ciToken') =>
  Type.Object(
    {
      project_id: Type.String({ pattern: idPattern('project') }),
      id: Type.String({ pattern: idPattern(kind) }),
    },
    { additionalProperties: false },
  );

// ---- API keys -------------------------------------------------------------------

const ApiKey = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    role: Role,
    scopes: Scopes,
    created_by: Type.String(),
    created_at: Timestamp,
    expires_at: Nullable(Timestamp),
    last_used_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
  },
  { additionalProperties: false },
);

export const CreateApiKeyBody = Type.Object(
  {
    id: Type.String({
      pattern: idPattern('apiKey'),
      description:
        'Chosen by the client (`key_` + 20 base62 characters, random): the grants are signed for this recipient id before the key exists',
    }),
    name: Name,
    role: Role,
    scopes: scopesInput(0),
    expires_at: Type.Optional(Timestamp),
    ...KeyMaterial,
  },
  { additionalProperties: false },
);

export const CreatedApiKey = DataEnvelope(
  Type.Object(
    {
      ...ApiKey.properties,
      bearer: Type.String({
        description:
          'Shown once. The client appends `.` and the key part to make the credential users copy',
      }),
    },
    { additionalProperties: false },
  ),
);

export const ApiKeyList = ListEnvelope(ApiKey);
export const ApiKeyListQuery = listQuerySchema(
  ['created_at', 'name', 'expires_at', 'last_used_at'],
  {},
);

// ---- CI tokens ------------------------------------------------------------------

export const MAX_CI_TOKEN_TTL_SECONDS = 3600;

const CiToken = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    scopes: Scopes,
    created_by: Type.String(),
    created_by_api_key: Nullable(Type.String()),
    created_at: Timestamp,
    expires_at: Timestamp,
    last_used_at: Nullable(Timestamp),
    revoked_at: Nullable(Timestamp),
  },
  { additionalProperties: false },
);

export const CreateCiTokenBody = Type.Object(
  {
    id: Type.String({
      pattern: idPattern('ciToken'),
      description:
        'Chosen by the client (`cit_` + 20 base62 characters, random): the grants are signed for this recipient id',
    }),
    name: Type.Optional(Name),
    scopes: scopesInput(1),
    ttl_seconds: Type.Optional(
      Type.Integer({
        minimum: 60,
        maximum: MAX_CI_TOKEN_TTL_SECONDS,
        default: MAX_CI_TOKEN_TTL_SECONDS,
        description: 'Lifetime; 1 hour by default and at most',
      }),
    ),
    ...KeyMaterial,
  },
  { additionalProperties: false },
);

export const CreatedCiToken = DataEnvelope(
  Type.Object(
    {
      ...CiToken.properties,
      bearer: Type.String({ description: 'Shown once' }),
    },
    { additionalProperties: false },
  ),
);

export const CiTokenList = ListEnvelope(CiToken);
export const CiTokenListQuery = listQuerySchema(['created_at', 'name', 'expires_at'], {});
