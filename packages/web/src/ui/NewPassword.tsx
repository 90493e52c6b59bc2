import { Field } from './Field';

/** A rough strength estimate in words; the server never sees the password, so the hint is ours to give. */
export function passwordStrength(password: string): { label: string; ok: boolean } {
  const classes = [/[a-z]/, /[A-Z]/, /\d/, /[^A-Za-z0-9]/].filter((r) => r.test(password)).length;
  const words = password.trim().split(/\s+/).length;
  if (password.length < 10) return { label: 'Too short: use at least 10 characters', ok: false };
  if (password.length >= 16 || (words >= 4 && password.length >= 14))
    return { label: 'Strong', ok: true };
  if (classes >= 3)
    return { label: 'Fair: longer is stronger (a passphrase of 4+ words)', ok: true };
  return { label: 'Weak: mix cases, digits and symbols, or use a longer passphrase', ok: true };
}

/** A new password with its strength hint, and the field that repeats it. */
export function NewPasswordFields({
  label,
  repeatLabel,
  name,
  repeatName,
  value,
  onChange,
  mismatch = false,
  autoFocus = false,
}: {
  label: string;
  repeatLabel: string;
  name: string;
  repeatName: string;
  value: string;
  onChange: (value: string) => void;
  mismatch?: boolean;
  autoFocus?: boolean;
}) {
  const strength = passwordStrength(value);
  return (
    <>
      <Field
        label={label}
        name={name}
        type="password"
        autoComplete="new-password"
        minLength={10}
        required
        autoFocus={autoFocus}
        value={value}
        onChange={(e) => onChange(e.target.value)}
        hint={
          value ? `Strength: ${strength.label}` : 'At least 10 characters; a passphrase is best'
        }
      />
      <Field
        label={repeatLabel}
        name={repeatName}
        type="password"
        autoComplete="new-password"
        required
        error={mismatch ? 'The two passwords differ' : undefined}
      />
    </>
  );
}
