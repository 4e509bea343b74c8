/**
 * Percent-decoding as the servers behind a target may do it: once, twice or
 * more, as UTF-8 (leniently: overlong `%C0%AE` is a `.`, bad bytes become
 * U+FFFD), as Latin-1, and IIS-style `%uXXXX`. Every rule that asks "what
 * could a server read here" (path segments, query names) starts from these
 * readings. Pure and bounded: at most DECODE_ROUNDS rounds, MAX_FORMS readings.
 */

const DECODE_ROUNDS = 8;
const MAX_FORMS = 64;

/** One byte run decoded leniently as UTF-8: overlong forms decode too (`C0 AE` → `.`), bad bytes become U+FFFD. */
function lenientUtf8(bytes: readonly number[]): string {
  let out = '';
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i] as number;
    const need = b >= 0xf0 && b < 0xf8 ? 3 : b >= 0xe0 ? 2 : b >= 0xc0 ? 1 : 0;
    if (b < 0x80) {
      out += String.fromCharCode(b);
      i++;
      continue;
    }
    const cont = bytes.slice(i + 1, i + 1 + need);
    if (need === 0 || cont.length < need || cont.some((c) => (c & 0xc0) !== 0x80)) {
      out += '\ufffd';
      i++;
      continue;
    }
    let cp = b & (0x3f >> need);
    for (const c of cont) cp = (cp << 6) | (c & 0x3f);
    out += cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? '\ufffd' : String.fromCodePoint(cp);
    i += need + 1;
  }
  return out;
}

const ESCAPES = /(?:%[0-9A-Fa-f]{2})+|%[uU][0-9A-Fa-f]{4}/g;

function hexBytes(run: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < run.length; i += 3) out.push(parseInt(run.slice(i + 1, i + 3), 16));
  return out;
}

/** One decoding round, as UTF-8 (lenient) and as Latin-1; `%uXXXX` in both. */
function decodeOnce(s: string): string[] {
  const utf8 = s.replace(ESCAPES, (run) => (/^%u/i.test(run) ? String.fromCharCode(parseInt(run.slice(2), 16)) : lenientUtf8(hexBytes(run))));
  const latin1 = s.replace(ESCAPES, (run) => (/^%u/i.test(run) ? String.fromCharCode(parseInt(run.slice(2), 16)) : String.fromCharCode(...hexBytes(run))));
  return [utf8, latin1];
}

/**
 * The text itself and what it reads as after each further round of
 * percent-decoding (UTF-8 and Latin-1 readings), without duplicates;
 * `complete` is false when the readings were cut at the bounds.
 */
export function decodedReadings(s: string): { readonly forms: readonly string[]; readonly complete: boolean } {
  const seen = new Set([s]);
  let frontier = [s];
  for (let round = 0; round < DECODE_ROUNDS && frontier.length > 0; round++) {
    const next: string[] = [];
    for (const f of frontier) {
      for (const d of decodeOnce(f)) {
        if (seen.has(d)) continue;
        if (seen.size >= MAX_FORMS) return { forms: [...seen], complete: false };
        seen.add(d);
        next.push(d);
      }
    }
    frontier = next;
  }
  return { forms: [...seen], complete: frontier.length === 0 };
}

/** Every reading of `s` (see decodedReadings). */
export function decodedForms(s: string): readonly string[] {
  return decodedReadings(s).forms;
}
