/**
 * A byte-capped collector for one output stream (stdout or stderr).
 *
 * Invariants: keeps at most `cap + readPast` bytes; `truncated` is set as
 * soon as one byte past the cap arrives, `saturated` once one past
 * `cap + readPast` does (the rest is dropped); `truncatedAt()` says how many
 * characters of `text()` fall within the cap — the ones after it are there
 * only so redaction sees a secret straddling the cut whole. The text form
 * never ends in half a UTF-8 character because of a cut (bytes that are
 * invalid UTF-8 anyway become U+FFFD, as everywhere else in Postern).
 */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private received = 0;

  constructor(
    private readonly cap: number,
    private readonly readPast = 0,
  ) {}

  get truncated(): boolean {
    return this.received > this.cap;
  }

  get saturated(): boolean {
    return this.received > this.cap + this.readPast;
  }

  add(chunk: Buffer): void {
    const room = this.cap + this.readPast - this.kept;
    this.received += chunk.length;
    if (room <= 0) return;
    this.chunks.push(chunk.length <= room ? chunk : chunk.subarray(0, room));
    this.kept += Math.min(room, chunk.length);
  }

  text(): string {
    const bytes = Buffer.concat(this.chunks);
    return (this.saturated ? bytes.subarray(0, utf8Boundary(bytes)) : bytes).toString('utf8');
  }

  /** When truncated: the length of `text()` that lies within the cap; null otherwise. */
  truncatedAt(): number | null {
    if (!this.truncated) return null;
    const head = Buffer.concat(this.chunks).subarray(0, this.cap);
    return head.subarray(0, utf8Boundary(head)).toString('utf8').length;
  }
}

/** The length of `bytes` without a trailing, incomplete UTF-8 sequence. */
function utf8Boundary(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let i = end - 1; i >= 0 && i >= end - 4; i--) {
    const b = bytes[i] ?? 0;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return end - i >= need ? end : i;
  }
  return end;
}
