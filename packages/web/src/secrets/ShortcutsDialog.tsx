import { Dialog } from '../ui/Dialog';

const SHORTCUTS: [string, string][] = [
  ['← ↑ → ↓', 'Move between cells'],
  ['Home / End', 'First / last column'],
  ['Enter or F2', 'Edit the value (Enter again stages it, Shift+Enter adds a line)'],
  ['Escape', 'Cancel the edit'],
  ['Space', 'Reveal or hide the value (on a name: the whole row)'],
  ['C', 'Copy the value without revealing it'],
  ['H', 'History of the secret'],
  ['Delete or Backspace', 'Stage deleting the secret'],
  ['U', 'Undo the staged change of the cell'],
  ['/', 'Filter by name'],
  ['Shift+R', 'Review pending changes'],
  ['?', 'This list'],
];

export function ShortcutsDialog({ onClose }: { onClose: () => void }) {
  return (
    <Dialog title="Keyboard shortcuts" onClose={onClose}>
      <table className="table">
        <tbody>
          {SHORTCUTS.map(([keys, what]) => (
            <tr key={keys}>
              <th scope="row">
                <kbd>{keys}</kbd>
              </th>
              <td>{what}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Dialog>
  );
}
