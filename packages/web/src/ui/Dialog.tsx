import { useEffect, useId, useRef, type ReactNode } from 'react';

/**
 * A modal built on the native <dialog>: the browser traps focus, closes it on
 * Escape and restores focus afterwards, with no library and no inline style.
 */
export function Dialog({
  title,
  onClose,
  children,
  wide = false,
}: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className={wide ? 'dialog wide' : 'dialog'}
      aria-labelledby={titleId}
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <header className="dialog-header">
        <h2 id={titleId}>{title}</h2>
        <button type="button" className="icon" aria-label="Close" onClick={onClose}>
          ×
        </button>
      </header>
      {children}
    </dialog>
  );
}

/** Asks before a destructive action; names what will be lost, and may ask to type a name. */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  typeToConfirm,
  busy,
  error,
  onConfirm,
  onClose,
}: {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  typeToConfirm?: string;
  busy?: boolean;
  error?: ReactNode;
  onConfirm: () => void;
  onClose: () => void;
}) {
  const inputId = useId();
  const typed = useRef<HTMLInputElement>(null);
  return (
    <Dialog title={title} onClose={onClose}>
      <form
        className="stack"
        onSubmit={(event) => {
          event.preventDefault();
          if (typeToConfirm !== undefined && typed.current?.value !== typeToConfirm) {
            typed.current?.setCustomValidity(`Type ${typeToConfirm} to confirm`);
            typed.current?.reportValidity();
            return;
          }
          onConfirm();
        }}
      >
        {children}
        {typeToConfirm !== undefined ? (
          <div className="field">
            <label htmlFor={inputId}>
              Type <strong className="mono">{typeToConfirm}</strong> to confirm
            </label>
            <input
              id={inputId}
              ref={typed}
              autoComplete="off"
              spellCheck={false}
              onInput={() => typed.current?.setCustomValidity('')}
            />
          </div>
        ) : null}
        {error}
        <div className="actions">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="danger" disabled={busy}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </form>
    </Dialog>
  );
}
