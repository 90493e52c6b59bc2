import { Type, type Static } from 'typebox';
import {
  KDF_SALT_PATTERN,
  KEY_32_PATTERN,
  MAX_KDF_PARAMS,
  WRAPPED_PRIVATE_KEYS_PATTERN,
} from '@coffer/sdk';
import { idPattern } from '../../ids.js';
import { DataEnvelope, ListEnvelope, Timestamp } from '../../http/schemas.js';
import { listQuerySchema, type ListParams } from '../../http/pagination.js';

// Field shapes come from the SDK's crypto module, so the server accepts exactly
// what every client can decode (canonical base64url of the right length).

const Email = Type.String({
  minLength: 3,
  maxLength: 320,
  description: 'E-mail address; surrounding spaces are trimmed and it is compared lower-cased',
});
const Name = Type.String({ minLength: 1, maxLength: 100, description: 'Display name' });
const Key32 = (description: string) => Type.String({ pattern: KEY_32_PATTERN.source, description });
const Wrapped = (description: string) =>
  Type.String({ pattern: WRAPPED_PRIVATE_KEYS_PATTERN.source, description });

export const KdfParams = Type.Object(
  {
    algorithm: Type.Literal('argon2id'),
    ops_limit: Type.Integer({ minimum: 1, maximum: MAX_KDF_PARAMS.ops_limit }),
    mem_limit_kib: Type.Integer({ minimum: 8, maximum: MAX_KDF_PARAMS.mem_limit_kib }),
    salt: Type.String({ pattern: KDF_SALT_PATTERN.source, description: '16 bytes, base64url' }),
  },
  {
    additionalProperties: false,
    description:
      'Argon2id parameters the client derives its master key with. The server refuses parameters below its configured minimum (KDF_MIN_OPS, KDF_MIN_MEM_KIB).',
  },
);
export type KdfParams = Static<typeof KdfParams>;

const AuthKey = Key32(
  'HKDF(master key, "auth"), base64url. Never the password; the server stores a hash of it.',
);

/** What a client sends to (re)wrap its keys under a new password. */
const PasswordMaterial = {
  kdf_params: KdfParams,
  auth_key: AuthKey,
  wrapped_private_keys: Wrapped(
    'The X25519 and Ed25519 private keys encrypted under the password wrap key (context "password")',
  ),
};

export const PreloginBody = Type.Object({ email: Email }, { additionalProperties: false });
export type PreloginBody = Static<typeof PreloginBody>;

export const SignupBody = Type.Object(
  {
    email: Email,
    name: Name,
    ...PasswordMaterial,
    recovery_auth_key: Key32(
      'HKDF(recovery key, "recovery auth"), base64url; proves the recovery key later. Stored hashed.',
    ),
    recovery_wrapped_private_keys: Wrapped(
      'The same private keys encrypted under the recovery wrap key (context "recovery")',
    ),
    public_key: Key32('X25519 public key (receives vault grants), base64url'),
    signing_public_key: Key32('Ed25519 public key (signs grants), base64url'),
    invitation_token: Type.Optional(
      Type.String({
        minLength: 16,
        maxLength: 200,
        description:
          'The token from an invitation e-mail. Required when SIGNUP_POLICY=invite (except for the first user); proves the e-mail address.',
      }),
    ),
  },
  { additionalProperties: false },
);
export type SignupBody = Static<typeof SignupBody>;

export const LoginBody = Type.Object(
  { email: Email, auth_key: AuthKey },
  { additionalProperties: false },
);
export type LoginBody = Static<typeof LoginBody>;

export const ChangePasswordBody = Type.Object(
  {
    current_auth_key: Key32('The auth key derived from the current password'),
    ...PasswordMaterial,
  },
  { additionalProperties: false },
);
export type ChangePasswordBody = Static<typeof ChangePasswordBody>;

const RecoveryAuthKey = Key32('The recovery auth key derived from the recovery key');

export const RecoveryKeysBody = Type.Object(
  { email: Email, recovery_auth_key: RecoveryAuthKey },
  { additionalProperties: false },
);
export type RecoveryKeysBody = Static<typeof RecoveryKeysBody>;

export const RecoveryResetBody = Type.Object(
  { email: Email, recovery_auth_key: RecoveryAuthKey, ...PasswordMaterial },
  { additionalProperties: false },
);
export type RecoveryResetBody = Static<typeof RecoveryResetBody>;

export const User = Type.Object(
  {
    id: Type.String({ pattern: idPattern('user') }),
    email: Type.String(),
    name: Type.String(),
    email_verified: Type.Boolean(),
    public_key: Type.String({ description: 'X25519, base64url' }),
    signing_public_key: Type.String({ description: 'Ed25519, base64url' }),
    created_at: Timestamp,
  },
  { additionalProperties: false },
);
export type User = Static<typeof User>;

const SessionInfo = Type.Object(
  { id: Type.String({ pattern: idPattern('session') }), expires_at: Timestamp },
  { additionalProperties: false },
);

export const PreloginResponse = DataEnvelope(
  Type.Object({ kdf_params: KdfParams }, { additionalProperties: false }),
);
export const SignupResponse = DataEnvelope(
  Type.Object({ user: User }, { additionalProperties: false }),
);
export const LoginResponse = DataEnvelope(
  Type.Object(
    {
      user: User,
      kdf_params: KdfParams,
      wrapped_private_keys: Type.String(),
      session: SessionInfo,
    },
    { additionalProperties: false },
  ),
);
export const MeResponse = DataEnvelope(User);
export const MyKeysResponse = DataEnvelope(
  Type.Object(
    {
      kdf_params: KdfParams,
      wrapped_private_keys: Type.String(),
      public_key: Type.String(),
      signing_public_key: Type.String(),
    },
    { additionalProperties: false },
  ),
);
export const RecoveryKeysResponse = DataEnvelope(
  Type.Object({ recovery_wrapped_private_keys: Type.String() }, { additionalProperties: false }),
);

export const Session = Type.Object(
  {
    id: Type.String({ pattern: idPattern('session') }),
    created_at: Timestamp,
    last_used_at: Timestamp,
    expires_at: Timestamp,
    ip: Type.Union([Type.String(), Type.Null()]),
    user_agent: Type.Union([Type.String(), Type.Null()]),
    current: Type.Boolean({ description: 'The session this request was made with' }),
  },
  { additionalProperties: false },
);
export type Session = Static<typeof Session>;

export const SessionList = ListEnvelope(Session);
export const SessionListQuery = listQuerySchema(['created_at', 'last_used_at', 'expires_at']);
export type SessionListQuery = ListParams<'created_at' | 'last_used_at' | 'expires_at'>;

export const SessionParams = Type.Object(
  { session_id: Type.String({ maxLength: 100 }) },
  { additionalProperties: false },
);
