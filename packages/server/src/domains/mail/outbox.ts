import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { newId } from '../../ids.js';
import { insertOutboxMessage } from './outbox.repo.js';

/** An e-mail as the outbox stores it (`kind: 'email'`). */
export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  html: string;
}

/**
 * Writes an e-mail to the transactional outbox. Call it with the handle of the
 * transaction that makes the change the e-mail announces: both commit or
 * neither does. After the commit, wake the outbox worker to send it at once.
 */
export async function enqueueEmail(
  db: Kysely<Database>,
  message: EmailMessage,
  at: Date,
): Promise<string> {
  const id = newId('outbox');
  await insertOutboxMessage(db, {
    id,
    kind: 'email',
    payload: JSON.stringify(message),
    at: at.toISOString(),
  });
  return id;
}
