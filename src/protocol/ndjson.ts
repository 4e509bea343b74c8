/**
 * Newline-delimited JSON framing, the one splitter behind every line-based
 * channel: the MCP stdio shim (client lines and daemon lines), the daemon's
 * agent socket and the operator channel. Lines are whole byte strings, so a
 * multi-byte character that straddles two reads arrives intact; nothing is
 * decoded here unless the caller asks for strict UTF-8 (`LineReader`).
 *
 * Invariants: never more than `limit` bytes of an unfinished line are held; a
 * longer line is reported at once (`overflow`, for channels that close) and,
 * when it ends, by its first and last few hundred bytes (`oversized`, for
 * channels that answer it and go on); a limit changed between two events
 * applies to the very next line.
 */

/** How much of an oversized line is kept to identify it (its id and method). */
export const EDGE_BYTES = 512;

export interface Oversized {
  readonly head: string;
  readonly tail: string;
}

type FrameEvent =
  | { readonly kind: 'line'; readonly line: Buffer }
  /** The current line just passed the limit; its bytes are being discarded. */
  | { readonly kind: 'overflow' }
  /** The discarded line ended; these are its edges. */
  | { readonly kind: 'oversized'; readonly edges: Oversized };

export class FrameSplitter {
  #parts: Buffer[] = [];
  #size = 0;
  #discarding = false;
  #head = Buffer.alloc(0);
  #tail = Buffer.alloc(0);
  #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  setLimit(limit: number): void {
    this.#limit = limit;
  }

  *push(chunk: Buffer): Generator<FrameEvent, void, undefined> {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
      if (this.#discarding) {
        this.#tail = Buffer.from(Buffer.concat([this.#tail, piece]).subarray(-EDGE_BYTES));
      } else if (this.#size + piece.length > this.#limit) {
        const all = Buffer.concat([...this.#parts, piece]);
        this.#head = Buffer.from(all.subarray(0, EDGE_BYTES));
        this.#tail = Buffer.from(all.subarray(-EDGE_BYTES));
        this.#parts = [];
        this.#size = 0;
        this.#discarding = true;
        yield { kind: 'overflow' };
      } else if (piece.length > 0) {
        this.#parts.push(Buffer.from(piece));
        this.#size += piece.length;
      }
      if (nl === -1) return;
      start = nl + 1;
      if (this.#discarding) {
        this.#discarding = false;
        const edges = { head: this.#head.toString('utf8'), tail: this.#tail.toString('utf8') };
        this.#head = this.#tail = Buffer.alloc(0);
        yield { kind: 'oversized', edges };
      } else {
        const line = this.#parts.length === 1 ? (this.#parts[0] ?? Buffer.alloc(0)) : Buffer.concat(this.#parts);
        this.#parts = [];
        this.#size = 0;
        yield { kind: 'line', line };
      }
    }
  }
}

/**
 * Splits a byte stream into lines of at most `maxBytes` (without the newline;
 * blank lines are skipped) for channels that go on after a bad line: a longer
 * line is dropped and reported by its edges.
 */
export function lineSplitter(maxBytes: number, onLine: (line: Buffer) => void, onOversized: (o: Oversized) => void = () => undefined): (chunk: Buffer) => void {
  const frames = new FrameSplitter(maxBytes);
  return (chunk) => {
    for (const e of frames.push(chunk)) {
      if (e.kind === 'line' && e.line.toString('latin1').trim() !== '') onLine(e.line);
      else if (e.kind === 'oversized') onOversized(e.edges);
    }
  };
}

export type LineEvent = { readonly kind: 'line'; readonly line: string } | { readonly kind: 'too-long' } | { readonly kind: 'bad-utf8' };

/**
 * Strict UTF-8 lines for channels that close on the first bad line (the
 * operator channel): after 'too-long' or 'bad-utf8' the caller stops
 * iterating and closes. Lines are yielded one at a time, so a limit changed
 * while consuming applies to the very next line.
 */
export class LineReader {
  readonly #frames: FrameSplitter;
  readonly #decoder = new TextDecoder('utf-8', { fatal: true });

  constructor(limit: number) {
    this.#frames = new FrameSplitter(limit);
  }

  setLimit(limit: number): void {
    this.#frames.setLimit(limit);
  }

  *push(chunk: Buffer): Generator<LineEvent, void, undefined> {
    for (const e of this.#frames.push(chunk)) {
      if (e.kind === 'overflow') return yield { kind: 'too-long' };
      if (e.kind !== 'line') continue;
      let line: string;
      try {
        line = this.#decoder.decode(e.line);
      } catch {
        return yield { kind: 'bad-utf8' };
      }
      yield { kind: 'line', line };
    }
  }
}

/** One message as one line. */
export function encodeLine(msg: unknown): string {
  return `${JSON.stringify(msg)}\n`;
}
