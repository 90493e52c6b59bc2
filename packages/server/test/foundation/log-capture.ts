import { Writable } from 'node:stream';

export interface LogLine {
  level: number;
  msg?: string;
  reqId?: string;
  [field: string]: unknown;
}

/** A pino destination that keeps every line the app writes, raw and parsed. */
export class LogCapture extends Writable {
  text = '';

  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }

  get lines(): LogLine[] {
    return this.text
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as LogLine);
  }

  /** Logger options for `startTestApp(d, { deps: { logger: capture.options() } })`. */
  options(level = 'info') {
    return { level, stream: this };
  }
}
