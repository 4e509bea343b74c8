/**
 * The demo's voice: one writer for everything `postern demo` prints, so the
 * whole transcript can be checked for secrets at the end. Lines are written
 * as they happen; text that came from elsewhere (targets, cards, results) is
 * sanitized by the caller before it gets here. A step's narration is
 * word-wrapped to the terminal's width under its label; other lines (the
 * configuration snippet, the request log) are written as they are, so they
 * can be copied. The transcript keeps every line unwrapped.
 */
import stringWidth from 'string-width';
import type { StoryStep } from './story.js';

export interface Narrator {
  line(text?: string): void;
  step(s: StoryStep): void;
  readonly transcript: readonly string[];
}

const LABEL_WIDTH = 14;
/** Below this many cells for the text, wrapping would only scatter it. */
const MIN_TEXT_WIDTH = 20;

/** Rows of at most `width` cells, broken at spaces; a word longer than a row is cut. */
export function wrapWords(text: string, width: number): string[] {
  const rows: string[] = [];
  let row = '';
  const push = (): void => {
    rows.push(row);
    row = '';
  };
  for (const word of text.split(' ')) {
    let rest = word;
    while (stringWidth(rest) > width) {
      if (row !== '') push();
      let cut = '';
      for (const ch of rest) {
        if (stringWidth(cut + ch) > width) break;
        cut += ch;
      }
      if (cut === '') cut = [...rest][0] ?? '';
      rows.push(cut);
      rest = rest.slice(cut.length);
    }
    if (rest === '') continue;
    if (row === '') row = rest;
    else if (stringWidth(`${row} ${rest}`) <= width) row = `${row} ${rest}`;
    else {
      push();
      row = rest;
    }
  }
  if (row !== '' || rows.length === 0) push();
  return rows;
}

/** `columns`: the terminal's width; without one (a pipe, CI) narration is not wrapped. */
export function narrator(write: (text: string) => void, columns?: number): Narrator {
  const transcript: string[] = [];
  const line = (text = ''): void => {
    transcript.push(text);
    write(`${text}\n`);
  };
  return {
    line,
    step(s) {
      const head = `  ${String(s.n).padStart(2)}. ${s.label.padEnd(LABEL_WIDTH)}`;
      const pad = ' '.repeat(head.length);
      const width = columns === undefined ? undefined : columns - head.length - 1;
      s.lines.forEach((l, i) => {
        transcript.push(`${i === 0 ? head : pad}${l}`);
        const rows = width === undefined || width < MIN_TEXT_WIDTH ? [l] : wrapWords(l, width);
        rows.forEach((r, j) => write(`${i === 0 && j === 0 ? head : pad}${r}\n`));
      });
    },
    transcript,
  };
}
