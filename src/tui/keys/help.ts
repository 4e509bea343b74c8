/**
 * The `?` screen: every key, by view, read from the key tables (one row a
 * key, the view named on its first row so the whole list fits a 24-row
 * terminal); an observer's list has no deciding key. The key that closes it
 * then does its own job (Esc and `?` only close it).
 */
import { KEY_SECTIONS } from './tables.js';
import { line, type Line } from '../lines.js';
import { clipCells } from '../text.js';

const TITLE_COL = 11;
const KEY_COL = 8;

export function helpLines(width: number, observe: boolean): Line[] {
  const out: Line[] = [line(clipCells('Keys (any key closes this help, then does its job; Esc and ? only close it)', width), 'title')];
  for (const s of KEY_SECTIONS) {
    const keys = s.keys.filter((k) => !observe || k.decides !== true);
    keys.forEach((k, i) => {
      const what = k.help ?? (typeof k.description === 'string' ? k.description : k.key);
      out.push([
        { text: (i === 0 ? s.title : '').padEnd(TITLE_COL), tone: 'warn' },
        { text: k.key.padEnd(KEY_COL), tone: 'key' },
        { text: clipCells(what, Math.max(1, width - TITLE_COL - KEY_COL)) },
      ]);
    });
  }
  if (observe) out.push(line('observer (read-only): no key decides anything', 'dim'));
  return out;
}
