/** "Reveal" / "Hide" for one value, pressed while it is shown. */
export function RevealButton({
  shown,
  what,
  onToggle,
}: {
  shown: boolean;
  /** Names the value for screen readers: "Reveal DATABASE_URL in staging". */
  what?: string;
  onToggle: () => void;
}) {
  const verb = shown ? 'Hide' : 'Reveal';
  return (
    <button
      type="button"
      aria-pressed={shown}
      onClick={onToggle}
      {...(what ? { 'aria-label': `${verb} ${what}` } : {})}
    >
      {verb}
    </button>
  );
}
