export { ready } from './sodium.js';
export { CryptoError, isCryptoError, type CryptoErrorCode } from './errors.js';
export { encodeParts, fromBase64url, toBase64url } from './encoding.js';
export { hkdfSha256, hmacSha256 } from './hkdf.js';
export {
  KDF_SALT_PATTERN,
  KEY_32_PATTERN,
  SEALED_KEY_PATTERN,
  SIGNATURE_PATTERN,
  base64urlPattern,
} from './patterns.js';
export {
  DEFAULT_KDF_PARAMS,
  KDF_SALT_BYTES,
  MAX_KDF_PARAMS,
  MIN_KDF_PARAMS,
  assertKdfParamsStrength,
  deriveMasterKey,
  derivePasswordKeys,
  generateKdfParams,
  validateKdfParams,
  type KdfParams,
  type PasswordKeys,
} from './password.js';
export {
  WRAPPED_PRIVATE_KEYS_PATTERN,
  generateUserKeys,
  unwrapPrivateKeys,
  wrapPrivateKeys,
  type KeyPair,
  type UserKeys,
  type WrapContext,
} from './user-keys.js';
export {
  RECOVERY_KEY_BYTES,
  deriveRecoveryKeys,
  formatRecoveryKey,
  generateRecoveryKey,
  parseRecoveryKey,
  type RecoveryKeys,
} from './recovery.js';
export { fingerprint } from './fingerprint.js';
export { openFromSelf, sealToSelf, type SelfSealed } from './self-seal.js';
export { PROJECT_KEY_BYTES, deriveEnvironmentKey, generateProjectKey } from './vault.js';
export {
  MAX_SECRET_ENVELOPE_LENGTH,
  MAX_SECRET_VALUE_BYTES,
  SECRET_ENVELOPE_PATTERN,
  decryptSecretValue,
  envelopeEpoch,
  encryptSecretValue,
  parseEnvelope,
  type DecryptSecretValueInput,
  type EncryptSecretValueInput,
  type ParsedEnvelope,
  type SecretBinding,
} from './envelope.js';
export {
  createGrant,
  openGrant,
  verifyGrantSignature,
  type CreateGrantInput,
  type Grant,
  type GrantExpectation,
  type GrantKind,
  type OpenGrantOptions,
} from './grant.js';
export {
  BEARER_PATTERN,
  TOKEN_PREFIXES,
  decodeKeyPart,
  encodeKeyPart,
  generateBearer,
  generateTokenCredential,
  hashBearer,
  isWellFormedBearer,
  parseCredential,
  tokenKeyPairFromKeyPart,
  type KeyPartContents,
  type TokenCredential,
  type TokenPrefix,
} from './token.js';
export {
  INTRODUCTION_PROOF_PATTERN,
  INTRODUCTION_SECRET_BYTES,
  SEALED_INTRODUCTION_PATTERN,
  generateIntroductionSecret,
  introductionProof,
  inviterProof,
  openIntroductionSecret,
  sealIntroductionSecret,
  sealedIntroductionEpoch,
  verifyIntroductionProof,
  verifyInviterProof,
  type IntroducedKeys,
  type SealIntroductionInput,
} from './introduction.js';
export {
  keyPinsMessage,
  signKeyPins,
  verifyKeyPins,
  type KeyPin,
  type KeyPinStatus,
  type KeyPinsDocument,
  type ProjectPin,
  type SignedKeyPins,
} from './key-pins.js';
export {
  MAX_CHAIN_LENGTH,
  membershipLinkHash,
  membershipMessage,
  nextMembershipStatement,
  projectFingerprint,
  signMembershipStatement,
  verifyMembershipChain,
  wasChainAdmin,
  type ChainMember,
  type MembershipKind,
  type MembershipRole,
  type MembershipState,
  type MembershipStatement,
  type MembershipSubject,
  type UnsignedStatement,
} from './membership.js';
export {
  MAX_OVERRIDE_ENVELOPE_LENGTH,
  OVERRIDE_ENVELOPE_PATTERN,
  decryptOverride,
  deriveOverrideKey,
  encryptOverride,
  type OverrideBinding,
} from './override.js';
