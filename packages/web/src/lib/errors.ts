import { isCofferApiError, isCryptoError, isVaultError, type ApiErrorDetail } from '@coffer/sdk';

/** What the dashboard shows for a failure: words for people, and the fields it concerns. */
export interface Problem {
  message: string;
  /** Field-level issues from a Form A `details` array, keyed by field name. */
  fields: Record<string, string>;
  /** No answer came: the network or the server is down. Offer a retry. */
  network: boolean;
  /** Trying again may work: no answer, or a server-side failure (5xx, 429). */
  retryable: boolean;
  /** The session ended (401): the app returns to sign-in. */
  signedOut: boolean;
  requestId: string | null;
  /** The SDK's own account of a refusal (who, which key), shown below the words. */
  detail?: string;
}

const ISSUE_WORDS: Record<string, string> = {
  required: 'is required',
  unknown: 'is not a known field',
  invalid: 'is not valid',
  too_long: 'is too long',
  too_short: 'is too short',
  maximum: 'is too large',
  minimum: 'is too small',
  format: 'has the wrong format',
  stale: 'was changed by someone else',
  stale_epoch: 'was encrypted under an old key',
  already_member: 'is already a member of this project',
};

/**
 * The vault's refusals that protect the user from the server itself, in words:
 * what happened and what to do. The SDK's message (naming the user or key) follows.
 */
const VAULT_WORDS: Record<string, string> = {
  chain_invalid:
    "This project's signed membership chain does not verify: a statement was forged or altered. Your browser refuses it; tell the project's admins.",
  chain_changed:
    'The server shows this project with another membership chain than the one your browser expected (from when you joined, or from your introduction link): its fingerprint differs. Your browser refuses it: the project may have been replaced.',
  chain_rollback:
    "The server shows this project's membership chain without statements you have seen. Your browser refuses it: the server may be hiding who was added or removed.",
  not_chain_admin:
    "You are not an admin in this project's signed membership chain, so your browser cannot sign who is a member. Ask an admin who is in the chain.",
  already_chained: 'This project has a signed membership chain already.',
  untrusted_granter:
    "Your project key was granted by someone the project's signed membership chain does not show as an admin. Your browser refuses it, so no values are shown: someone may be planting a key. Tell the project's admins.",
};

export function describeDetail(detail: ApiErrorDetail): string {
  return ISSUE_WORDS[detail.issue] ?? detail.issue.replaceAll('_', ' ');
}

export function toProblem(error: unknown): Problem {
  const base: Problem = {
    message: '',
    fields: {},
    network: false,
    retryable: false,
    signedOut: false,
    requestId: null,
  };
  if (isCofferApiError(error)) {
    const fields: Record<string, string> = {};
    for (const detail of error.details) fields[detail.field] = describeDetail(detail);
    return {
      ...base,
      message: error.message,
      fields,
      signedOut: error.status === 401,
      retryable: error.status >= 500 || error.status === 429,
      requestId: error.requestId,
    };
  }
  if (error instanceof Error && error.name === 'CofferNetworkError') {
    return {
      ...base,
      network: true,
      retryable: true,
      message: 'Coffer could not be reached. Check your connection and try again.',
    };
  }
  if (isCryptoError(error) && error.code === 'decryption_failed') {
    return { ...base, message: 'Wrong password, or the data could not be decrypted.' };
  }
  if (isVaultError(error) && VAULT_WORDS[error.code])
    return { ...base, message: VAULT_WORDS[error.code]!, detail: error.message };
  if (isVaultError(error) || isCryptoError(error)) return { ...base, message: error.message };
  if (error instanceof Error) return { ...base, message: error.message };
  return { ...base, message: 'Something went wrong.' };
}
