import { readFile, readdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { SMTPServer } from 'smtp-server';

export interface ReceivedMail {
  from: string;
  to: string[];
  /** The whole RFC 5322 message as received. */
  raw: string;
  subject: string;
  /** The decoded text/plain part. */
  text: string;
}

export interface TestSmtpServer {
  url: string;
  received: ReceivedMail[];
  /** How many deliveries were refused (see `refuseFirst`). */
  refused: number;
  close(): Promise<void>;
}

/**
 * A real SMTP server in this process (the `smtp-server` package), plain text
 * on a free local port. `refuseFirst: n` answers the first n messages with a
 * temporary failure (451), to exercise retries.
 */
export async function startSmtpServer(options: { refuseFirst?: number } = {}) {
  const received: ReceivedMail[] = [];
  const state = { refused: 0 };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        if (state.refused < (options.refuseFirst ?? 0)) {
          state.refused++;
          const err = Object.assign(new Error('Try again later'), { responseCode: 451 });
          return callback(err);
        }
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          ...parseMail(Buffer.concat(chunks).toString('utf8')),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  const smtp: TestSmtpServer = {
    url: `smtp://127.0.0.1:${port}`,
    received,
    get refused() {
      return state.refused;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return smtp;
}

/**
 * The messages the outbox worker wrote to `$DATA_DIR/outbox/*.eml` (no
 * `SMTP_URL`), parsed: the mailbox of every test server without SMTP.
 */
export async function outboxMails(dataDir: string): Promise<ReturnType<typeof parseMail>[]> {
  const dir = join(dataDir, 'outbox');
  const names = await readdir(dir).catch(() => [] as string[]);
  const files = names.filter((name) => name.endsWith('.eml'));
  return Promise.all(files.map(async (name) => parseMail(await readFile(join(dir, name), 'utf8'))));
}

/** The parts of an RFC 5322 message these tests read (also for `.eml` files). */
export function parseMail(raw: string): { raw: string; subject: string; text: string } {
  return { raw, subject: headerOf(raw, 'subject'), text: textPartOf(raw) };
}

function headerOf(raw: string, name: string): string {
  const head = raw.split(/\r?\n\r?\n/)[0] ?? '';
  const unfolded = head.replace(/\r?\n[ \t]+/g, ' ');
  const line = unfolded.split(/\r?\n/).find((l) => l.toLowerCase().startsWith(`${name}:`));
  return decodeWords(line?.slice(name.length + 1).trim() ?? '');
}

/** RFC 2047 encoded words (`=?UTF-8?Q?…?=` / `=?UTF-8?B?…?=`), as nodemailer writes them. */
function decodeWords(value: string): string {
  return value
    .replace(/\?=\s+=\?/g, '?==?')
    .replace(/=\?[^?]+\?([QB])\?([^?]*)\?=/gi, (_m, enc: string, text: string) =>
      enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64').toString('utf8')
        : decodeQuotedPrintable(text.replace(/_/g, ' ')),
    );
}

function decodeQuotedPrintable(text: string): string {
  const bytes = text
    .replace(/=\r?\n/g, '')
    .replace(/=([0-9A-F]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/** The text/plain part of a (possibly multipart) message, transfer-decoded. */
function textPartOf(raw: string): string {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(raw)?.[1];
  const parts = boundary ? raw.split(`--${boundary}`) : [raw];
  for (const part of parts) {
    const split = part.search(/\r?\n\r?\n/);
    if (split < 0) continue;
    const headers = part.slice(0, split).toLowerCase();
    if (!headers.includes('content-type: text/plain')) continue;
    const body = part.slice(split).replace(/^\r?\n\r?\n/, '');
    if (headers.includes('content-transfer-encoding: base64'))
      return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
    if (headers.includes('content-transfer-encoding: quoted-printable'))
      return decodeQuotedPrintable(body);
    return body;
  }
  return '';
}
