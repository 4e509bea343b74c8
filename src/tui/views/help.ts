/** The `?` screen: every key, by view; an observer's list has no deciding key. */
import { KEY_SECTIONS } from '../keys.js';
import { line, type Line } from '../lines.js';
import { clipCells } from '../text.js';

export function helpLines(width: number, observe: boolean): Line[] {
  const out: Line[] = [line('Keys (any key closes this help)', 'title')];
  for (const s of KEY_SECTIONS) {
    const keys = s.keys.filter((k) => !observe || k.decides !== true);
    if (keys.length === 0) continue;
    out.push(line(s.title, 'warn'));
    for (const k of keys) out.push([{ text: `  ${k.keys.padEnd(20)}`, tone: 'key' }, { text: clipCells(k.what, Math.max(1, width - 22)) }]);
  }
  if (observe) out.push(line('observer (read-only): no key decides anything', 'dim'));
  return out;
}
