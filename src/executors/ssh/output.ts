/**
 * A byte-capped collector for one output stream (stdout or stderr).
 *
 * Invariants: keeps at most `cap` bytes; `truncated` is set as soon as one
 * byte past the cap arrives; the text form never ends in half a UTF-8
 * character because of the cut (bytes that are invalid UTF-8 anyway become
 * U+FFFD, as everywhere else in Postern).
 */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  add(chunk: Buffer): void {
    if (this.truncated) return;
    const room = this.cap - this.kept;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.kept += chunk.length;
      return;
    }
    if (room > 0) this.chunks.push(chunk.subarray(0, room));
    this.kept = this.cap;
    this.truncated = true;
  }

  text(): string {
    const bytes = Buffer.concat(this.chunks);
    return (this.truncated ? bytes.subarray(0, utf8Boundary(bytes)) : bytes).toString('utf8');
  }
}

/** The length of `bytes` without a trailing, incomplete UTF-8 sequence. */
export function utf8Boundary(bytes: Uint8Array): number {
  const end = bytes.length;
  for (let i = end - 1; i >= 0 && i >= end - 4; i--) {
    const b = bytes[i] ?? 0;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return end - i >= need ? end : i;
  }
  return end;
}
