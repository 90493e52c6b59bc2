/** A one-line progress bar on stderr, redrawn at most every 50 ms; silent when stderr is not a terminal. */
interface Progress {
  update(phase: string, done: number, total: number): void;
  finish(): void;
}

const WIDTH = 30;

export function progressBar(enabled = Boolean(process.stderr.isTTY)): Progress {
  let last = 0;
  let drawn = false;
  return {
    update(phase, done, total) {
      if (!enabled) return;
      const now = Date.now();
      if (done < total && now - last < 50) return;
      last = now;
      const ratio = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(ratio * WIDTH);
      const bar = `${'█'.repeat(filled)}${'░'.repeat(WIDTH - filled)}`;
      process.stderr.write(
        `\r\x1b[2K${phase.padEnd(12)} ${bar} ${String(Math.round(ratio * 100)).padStart(3)}%  ${done}/${total}`,
      );
      drawn = true;
    },
    finish() {
      if (drawn) process.stderr.write('\n');
      drawn = false;
    },
  };
}
