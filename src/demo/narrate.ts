/**
 * The demo's voice: one writer for everything `postern demo` prints, so the
 * whole transcript can be checked for secrets at the end. Lines are written
 * as they happen; text that came from elsewhere (targets, cards, results) is
 * sanitized by the caller before it gets here.
 */
import type { StoryStep } from './story.js';

export interface Narrator {
  line(text?: string): void;
  step(s: StoryStep): void;
  readonly transcript: readonly string[];
}

const LABEL_WIDTH = 14;

export function narrator(write: (text: string) => void): Narrator {
  const transcript: string[] = [];
  const line = (text = ''): void => {
    transcript.push(text);
    write(`${text}\n`);
  };
  return {
    line,
    step(s) {
      const head = `  ${String(s.n).padStart(2)}. ${s.label.padEnd(LABEL_WIDTH)}`;
      s.lines.forEach((l, i) => line(`${i === 0 ? head : ' '.repeat(head.length)}${l}`));
    },
    transcript,
  };
}
