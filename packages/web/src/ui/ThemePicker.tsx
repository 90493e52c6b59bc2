import { setTheme, THEMES, useTheme, type Theme } from '../lib/theme';

/** Light, dark, or the system's choice; kept in this browser. */
export function ThemePicker() {
  const theme = useTheme();
  return (
    <label className="theme-picker">
      <span className="visually-hidden">Theme</span>
      <select value={theme} onChange={(e) => setTheme(e.target.value as Theme)}>
        {THEMES.map(([value, label]) => (
          <option key={value} value={value}>
            {label} theme
          </option>
        ))}
      </select>
    </label>
  );
}
