// Readers for what GitHub Actions takes from a step, written from GitHub's
// documented rules (and the runner's behaviour on Linux), independently of
// Coffer's writers: the `$GITHUB_ENV` file and `::add-mask::` commands.

/**
 * Reads a `$GITHUB_ENV` file as the runner does after a step: lines end at LF;
 * empty lines are skipped; `NAME=value` when a `=` comes before any `<<` (the
 * value is the rest of the line, nothing trimmed); `NAME<<DELIMITER` otherwise,
 * whose value is every line up to the first line equal to DELIMITER, joined
 * with LF (the line break before the delimiter is not part of it). A later
 * assignment of a name wins. Throws where the runner fails the step.
 */
export function parseGithubEnv(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split('\n');
  // A final LF ends the last line; it does not start an empty one.
  if (lines.at(-1) === '') lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    const equals = line.indexOf('=');
    const heredoc = line.indexOf('<<');
    if (equals >= 0 && (heredoc < 0 || equals < heredoc)) {
      out.set(line.slice(0, equals), line.slice(equals + 1));
    } else if (heredoc >= 0) {
      const name = line.slice(0, heredoc);
      const delimiter = line.slice(heredoc + 2);
      if (name === '' || delimiter === '') throw new Error(`invalid format '${line}'`);
      const value: string[] = [];
      for (i++; ; i++) {
        if (i >= lines.length) throw new Error(`matching delimiter not found '${delimiter}'`);
        if (lines[i] === delimiter) break;
        value.push(lines[i]!);
      }
      out.set(name, value.join('\n'));
    } else {
      throw new Error(`invalid format '${line}'`);
    }
  }
  return out;
}

/** A workflow command's data as the runner decodes it: `%0D` CR, `%0A` LF, `%25` `%`. */
export function decodeMaskData(data: string): string {
  return data.replace(/%0D/g, '\r').replace(/%0A/g, '\n').replace(/%25/g, '%');
}

/**
 * The values registered by `::add-mask::VALUE` lines (a workflow command is a
 * whole line); any other line is an error, since masks are printed alone.
 */
export function parseGithubMasks(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines.map((line) => {
    const command = /^::add-mask::(.*)$/s.exec(line);
    if (!command) throw new Error(`not an add-mask command: ${JSON.stringify(line)}`);
    return decodeMaskData(command[1]!);
  });
}

/**
 * The lines of `value` that would still show if it were printed to the log
 * line by line, with every registered mask replaced (longest first, as a
 * secret masker does; here by a NUL, which no value holds, where the runner
 * writes `***`). Blank lines show nothing and do not count.
 */
export function unmaskedLines(value: string, masks: readonly string[]): string[] {
  const ordered = [...masks].sort((a, b) => b.length - a.length);
  return value
    .split(/\r\n|\r|\n/)
    .filter((line) => line.trim() !== '')
    .filter((line) => {
      let shown = line;
      for (const mask of ordered) shown = shown.split(mask).join('\0');
      return shown.includes(line);
    });
}
