import { DotenvSyntaxError, formatDotenv, parseDotenv, type DotenvIssue } from '@coffer/sdk/dotenv';
import type { Environment } from '@coffer/sdk';
import { useId, useMemo, useState } from 'react';
import { Dialog } from '../ui/Dialog';
import { stageValue, valueOf } from './Cell';
import type { SecretMeta } from './data';
import { staged } from './store';

/** The environment's values (staged ones included) as `.env` text, or why they cannot be. */
function currentText(
  environment: Environment,
  secrets: Map<string, SecretMeta>,
): { text: string; error?: string } {
  const entries: [string, string][] = [];
  const names = new Set(secrets.keys());
  for (const [environmentId, name] of staged.all())
    if (environmentId === environment.id) names.add(name);
  for (const name of [...names].sort()) {
    const value = valueOf(
      environment.id,
      name,
      secrets.get(name),
      staged.get(environment.id, name),
    );
    if (value !== undefined) entries.push([name, value]);
  }
  try {
    return { text: formatDotenv(entries) };
  } catch (error) {
    return { text: '', error: (error as Error).message };
  }
}

/**
 * An environment edited as `.env` text (paste a whole file): parsed with the
 * SDK's parser, line-numbered errors shown inline, and the differences staged
 * like any grid edit.
 */
export function EditAsTextDialog({
  environment,
  secrets,
  onClose,
}: {
  environment: Environment;
  secrets: Map<string, SecretMeta>;
  onClose: () => void;
}) {
  const initial = useMemo(() => currentText(environment, secrets), [environment, secrets]);
  const [text, setText] = useState(initial.text);
  const [issues, setIssues] = useState<readonly DotenvIssue[]>([]);
  const [removeOthers, setRemoveOthers] = useState(false);
  const textId = useId();

  function stage() {
    let entries;
    try {
      entries = parseDotenv(text);
    } catch (error) {
      if (error instanceof DotenvSyntaxError) {
        setIssues(error.issues);
        return;
      }
      throw error;
    }
    const seen = new Set<string>();
    for (const { name, value } of entries) {
      seen.add(name);
      stageValue(environment.id, name, secrets.get(name), value);
    }
    if (removeOthers) {
      for (const [name, meta] of secrets) {
        if (!seen.has(name))
          staged.set(environment.id, name, { kind: 'delete', baseVersion: meta.version });
      }
    }
    onClose();
  }

  return (
    <Dialog title={`Edit ${environment.name} as .env`} onClose={onClose} wide>
      <div className="stack">
        {initial.error ? (
          <p className="notice">
            The current values cannot all be written as .env text ({initial.error}). Paste new lines
            to add or change secrets; other secrets stay as they are.
          </p>
        ) : null}
        <div className="field">
          <label htmlFor={textId}>.env text</label>
          <textarea
            id={textId}
            className="mono dotenv-text"
            rows={16}
            spellCheck={false}
            autoComplete="off"
            value={text}
            aria-invalid={issues.length > 0 || undefined}
            aria-describedby={issues.length > 0 ? `${textId}-issues` : `${textId}-hint`}
            onChange={(e) => {
              setText(e.target.value);
              setIssues([]);
            }}
          />
          <div id={`${textId}-hint`} className="hint">
            NAME=value per line; # comments, export prefixes and quoted multi-line values are
            understood. Values are stored exactly as written: ${'{'}VAR{'}'} is not expanded.
          </div>
          {issues.length > 0 ? (
            <ul id={`${textId}-issues`} className="field-error issues" role="alert">
              {issues.map((issue) => (
                <li key={`${issue.line}:${issue.message}`}>
                  Line {issue.line}: {issue.message}
                </li>
              ))}
            </ul>
          ) : null}
        </div>
        <label className="check">
          <input
            type="checkbox"
            checked={removeOthers}
            onChange={(e) => setRemoveOthers(e.target.checked)}
          />
          Delete the secrets of {environment.name} that are not in the text
        </label>
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="primary" onClick={stage}>
            Stage changes
          </button>
        </div>
        <p className="muted small">Nothing is sent until you review and save.</p>
      </div>
    </Dialog>
  );
}
