/**
 * Stable error codes the SDK, CLI and dashboard can switch on. Messages never
 * contain key material, plaintext or ciphertext.
 */
export type CryptoErrorCode =
  | 'not_ready'
  | 'invalid_input'
  | 'invalid_kdf_params'
  | 'weak_kdf_params'
  | 'decryption_failed'
  | 'invalid_envelope'
  | 'value_too_large'
  | 'invalid_recovery_key'
  | 'invalid_grant'
  | 'invalid_signature'
  | 'grant_mismatch'
  | 'invalid_credential'
  | 'invalid_chain';

const DEFAULT_MESSAGES: Record<CryptoErrorCode, string> = {
  not_ready: 'crypto is not initialised: await ready() first',
  invalid_input: 'invalid input to a crypto function',
  invalid_kdf_params: 'invalid key derivation parameters',
  weak_kdf_params: 'key derivation parameters are weaker than the accepted minimum',
  decryption_failed: 'decryption failed: wrong key, wrong binding or tampered data',
  invalid_envelope: 'malformed encrypted envelope',
  value_too_large: 'value exceeds the maximum size',
  invalid_recovery_key: 'invalid recovery key',
  invalid_grant: 'malformed grant',
  invalid_signature: 'signature verification failed',
  grant_mismatch: 'grant is bound to another project, epoch, environment, kind or recipient',
  invalid_credential: 'malformed token credential',
  invalid_chain: 'the membership chain is malformed or fails a signature or rule',
};

export class CryptoError extends Error {
  readonly code: CryptoErrorCode;

  constructor(code: CryptoErrorCode, message: string = DEFAULT_MESSAGES[code]) {
    super(message);
    this.name = 'CryptoError';
    this.code = code;
  }
}

/** `instanceof` fails across duplicated bundles; this checks the shape too. */
export function isCryptoError(error: unknown, code?: CryptoErrorCode): error is CryptoError {
  if (!(error instanceof Error) || error.name !== 'CryptoError') return false;
  const actual = (error as { code?: unknown }).code;
  return typeof actual === 'string' && (code === undefined || actual === code);
}
