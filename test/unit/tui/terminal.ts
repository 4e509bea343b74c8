/**
 * A real terminal emulator for render tests: the TUI's bytes go into
 * @xterm/headless (80×24 unless told), and the test reads the screen as a
 * person would see it — rows of text, cell attributes, wrapped rows, the
 * title, and every OSC/DCS sequence the bytes carried. The emulator's width
 * table can be swapped for another terminal's (`WIDTH_TABLES`): terminals
 * disagree on how many cells a grapheme takes, and the screen must hold on
 * every one of them.
 */
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import xterm from '@xterm/headless';
import stringWidth from 'string-width';

type Cells = 0 | 1 | 2;
const WIDE_EMOJI = /[\p{Extended_Pictographic}\p{Regional_Indicator}\p{Emoji_Modifier}]/u;
const MARK = /[\p{Mn}\p{Me}\p{Cf}]/u;

function wideAt(cp: number, ambiguousWide: boolean): boolean {
  const ch = String.fromCodePoint(cp);
  return WIDE_EMOJI.test(ch) || stringWidth(ch, { ambiguousIsNarrow: !ambiguousWide }) === 2;
}

/** A terminal's width table: cells per code point, and whether a zero-width code point joins the cell before it. */
function table(version: string, wcwidth: (cp: number) => Cells, joins: boolean): xterm.IUnicodeVersionProvider {
  return {
    version,
    wcwidth,
    charProperties(cp: number, preceding: number): number {
      const w = wcwidth(cp);
      const join = joins && w === 0 && preceding !== 0;
      return ((w & 3) << 1) | (join ? 1 : 0);
    },
  };
}

/**
 * Width tables of terminals that disagree: xterm.js's own (Unicode 6), one
 * that draws every code point in a cell of its own at its widest (no
 * clustering, ambiguous characters wide, as in a CJK locale), and one that
 * joins marks and draws emoji and skin tones 2 cells each (Unicode 11 style).
 */
export const WIDTH_TABLES = {
  xterm: null,
  widest: table('widest', (cp) => (cp < 0x20 ? 0 : wideAt(cp, true) ? 2 : 1), false),
  joining: table('joining', (cp) => (cp < 0x20 ? 0 : MARK.test(String.fromCodePoint(cp)) ? 0 : wideAt(cp, false) ? 2 : 1), true),
} as const;
export type WidthTable = keyof typeof WIDTH_TABLES;

export class FakeTtyIn extends EventEmitter {
  isTTY = true;
  #queue: string[] = [];
  setEncoding(): void {}
  setRawMode(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  pause(): this {
    return this;
  }
  ref(): this {
    return this;
  }
  unref(): this {
    return this;
  }
  read(): string | null {
    return this.#queue.shift() ?? null;
  }
  type(s: string): void {
    this.#queue.push(s);
    this.emit('readable');
  }
}

export class Screen {
  readonly term: xterm.Terminal;
  readonly titles: string[] = [];
  readonly osc: number[] = [];
  readonly dcs: number[] = [];
  bells = 0;
  readonly out: Writable & { columns: number; rows: number; isTTY: boolean };
  #waiters: (() => void)[] = [];

  constructor(cols = 80, rows = 24, widths: WidthTable = 'xterm') {
    // convertEol: the tty driver turns LF into CR LF (onlcr) before a real terminal sees it.
    this.term = new xterm.Terminal({ cols, rows, allowProposedApi: true, scrollback: 0, convertEol: true });
    const provider = WIDTH_TABLES[widths];
    if (provider !== null) {
      this.term.unicode.register(provider);
      this.term.unicode.activeVersion = provider.version;
    }
    this.term.onTitleChange((t) => this.titles.push(t));
    this.term.onBell(() => (this.bells += 1));
    for (const id of [8, 52, 1, 2, 4, 7, 10, 11, 12, 104, 133, 1337]) {
      this.term.parser.registerOscHandler(id, () => {
        this.osc.push(id);
        return false;
      });
    }
    this.term.parser.registerDcsHandler({ intermediates: '+', final: 'q' }, () => {
      this.dcs.push(1);
      return false;
    });
    const term = this.term;
    const waiters = this.#waiters;
    const w = new Writable({
      write(chunk: Buffer | string, _enc, cb) {
        term.write(typeof chunk === 'string' ? chunk : chunk.toString('utf8'), () => {
          for (const f of waiters.slice()) f();
        });
        cb();
      },
    });
    this.out = Object.assign(w, { columns: cols, rows, isTTY: true });
  }

  rows(): string[] {
    const b = this.term.buffer.active;
    const out: string[] = [];
    for (let y = 0; y < this.term.rows; y++) out.push(b.getLine(b.viewportY + y)?.translateToString(true) ?? '');
    return out;
  }

  text(): string {
    return this.rows().join('\n');
  }

  /** Rows the terminal wrapped itself (a line that was wider than the screen). */
  wrappedRows(): number[] {
    const b = this.term.buffer.active;
    const out: number[] = [];
    for (let y = 0; y < b.length; y++) if (b.getLine(y)?.isWrapped === true) out.push(y);
    return out;
  }

  /** Cells drawn invisible (SGR 8) or in the same colour as their background. */
  hiddenCells(): string[] {
    const b = this.term.buffer.active;
    const found: string[] = [];
    const cell = b.getNullCell();
    for (let y = 0; y < this.term.rows; y++) {
      const l = b.getLine(b.viewportY + y);
      if (l === undefined) continue;
      for (let x = 0; x < this.term.cols; x++) {
        l.getCell(x, cell);
        const ch = cell.getChars();
        if (ch === '' || ch === ' ') continue;
        const sameColour = !cell.isFgDefault() && !cell.isBgDefault() && cell.getFgColor() === cell.getBgColor() && cell.getFgColorMode() === cell.getBgColorMode();
        if (cell.isInvisible() !== 0 || sameColour) found.push(`${x},${y}:${ch}`);
      }
    }
    return found;
  }

  resize(cols: number, rows: number): void {
    this.term.resize(cols, rows);
    this.out.columns = cols;
    this.out.rows = rows;
    this.out.emit('resize');
  }

  waitFor(pred: (text: string) => boolean, what: string): Promise<string> {
    if (pred(this.text())) return Promise.resolve(this.text());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; screen:\n${this.text()}`)), 8000);
      const check = (): void => {
        if (!pred(this.text())) return;
        clearTimeout(timer);
        this.#waiters.splice(this.#waiters.indexOf(check), 1);
        resolve(this.text());
      };
      this.#waiters.push(check);
    });
  }
}
