import { toProblem } from '../lib/errors';
import type { Signing } from './signing';

export function SigningNote({ signing, what }: { signing: Signing; what: string }) {
  switch (signing.kind) {
    case 'signed':
      return <>{what}, signed in the project's membership chain.</>;
    case 'outside':
      return (
        <>
          {what}. Nothing to sign: they are not in the membership chain (they join it when granted
          the key).
        </>
      );
    case 'unchained':
      return <>{what}, not signed: this project has no membership chain yet (sign it in Access).</>;
    case 'no_key':
      return (
        <>
          {what}, <strong>not signed</strong>: you hold no project key yet, so your browser cannot
          vouch for members.
        </>
      );
    case 'failed':
      return (
        <>
          {what} on the server, but <strong>not signed</strong>:{' '}
          {signing.error
            ? toProblem(signing.error).message
            : 'the membership chain did not take it.'}
        </>
      );
  }
}

/**
 * Invites with an introduction link when this admin holds the project key: the
 * link's secret (after `#`, never sent to a server) lets the invitee's browser
 * prove its keys, so granting needs no fingerprint comparison. The server's
 * e-mail goes out as well.
 */
