/**
 * Keymaps as data: a view's keys are a list of entries, each naming the keys
 * it answers to, how the key bar writes them, what it does, when the bar
 * shows it, and the handler. The key bar, the `?` screen and the input
 * handling are all read from the same list, so a key cannot be offered
 * without acting, or act without being listed.
 *
 * Invariants: a key press is matched by its name only (ink's flags are turned
 * into one name here, once); a letter typed with Alt (which the terminal
 * sends as Esc + letter) is named `meta-…` and matches no entry, so a stray
 * Esc can never turn into a `q`.
 */
import type { Key } from 'ink';
import type { KeyHint } from '../ui.js';

/** A key press as the reducer sees it: a name (`a`, `A`, `enter`, `esc`, `ctrl-c`, …) and the text it types. */
export interface KeyPress {
  readonly name: string;
  /** What the key types in a prompt ('' for keys that type nothing). */
  readonly text: string;
}

const SPECIAL = new Set(['enter', 'esc', 'tab', 'shift-tab', 'up', 'down', 'left', 'right', 'pgup', 'pgdn', 'home', 'end', 'backspace', 'space']);

/** A named key press (for tests and tables): `press('a')`, `press('esc')`, `press('ctrl-c')`. */
export function press(name: string): KeyPress {
  if (name === 'space') return { name, text: ' ' };
  const types = !SPECIAL.has(name) && !name.startsWith('ctrl-') && !name.startsWith('meta-');
  return { name, text: types ? name : '' };
}

/** Text typed or pasted at once (a prompt takes it whole; no entry matches it). */
export function typed(text: string): KeyPress {
  return { name: Array.from(text).length === 1 ? text : 'paste', text };
}

/** ink's (input, key) as one KeyPress. */
export function keyOf(input: string, key: Key): KeyPress {
  if (key.ctrl && input !== '') return press(`ctrl-${input.toLowerCase()}`);
  if (key.escape) return press('esc');
  if (key.return) return press('enter');
  if (key.tab) return press(key.shift ? 'shift-tab' : 'tab');
  if (key.upArrow) return press('up');
  if (key.downArrow) return press('down');
  if (key.leftArrow) return press('left');
  if (key.rightArrow) return press('right');
  if (key.pageUp) return press('pgup');
  if (key.pageDown) return press('pgdn');
  if (key.home) return press('home');
  if (key.end) return press('end');
  if (key.backspace || key.delete) return press('backspace');
  if (key.meta) return { name: `meta-${input}`, text: '' };
  if (input === ' ') return press('space');
  return typed(input);
}

/** One key of a view. `C` is what the handler and the predicates read; `O` what the handler returns. */
export interface KeyEntry<C, O> {
  /** The key names it answers to. */
  readonly keys: readonly string[];
  /** How the key bar and the help write the keys. */
  readonly key: string;
  /** The key bar's words (may depend on the moment: `quit` or `back`). */
  readonly description: string | ((c: C) => string);
  /** The `?` screen's words; the description when absent. */
  readonly help?: string;
  /** The key changes something on the daemon: an observer's help leaves it out. */
  readonly decides?: true;
  /** Whether the key bar shows it now (the help always lists it). */
  readonly shown: (c: C) => boolean;
  readonly handler: (c: C, k: KeyPress) => O;
}

export const always = (): boolean => true;
export const never = (): boolean => false;

function wordsOf<C>(e: KeyEntry<C, unknown>, c: C): string {
  return typeof e.description === 'string' ? e.description : e.description(c);
}

/** The first entry of the lists, in order, that answers to the key. */
export function match<C, O>(lists: ReadonlyArray<readonly KeyEntry<C, O>[]>, k: KeyPress): KeyEntry<C, O> | undefined {
  for (const list of lists) for (const e of list) if (e.keys.includes(k.name)) return e;
  return undefined;
}

/** The key bar: the entries shown now, in order. */
export function hintsOf<C>(lists: ReadonlyArray<readonly KeyEntry<C, unknown>[]>, c: C): KeyHint[] {
  const out: KeyHint[] = [];
  for (const list of lists) for (const e of list) if (e.shown(c)) out.push({ key: e.key, label: wordsOf(e, c) });
  return out;
}
