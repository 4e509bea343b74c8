/**
 * The textual forms in which a secret's bytes can come back to us: as UTF-8
 * text, base64 (standard and URL alphabets, padded or not, and the part of it
 * that survives when the secret sits at any offset inside a larger base64
 * stream), hex, every common flavour of percent-encoding, JSON string escapes,
 * HTML escapes, and for multi-line secrets (PEM keys) their lines. Besides
 * the literal forms, `viewForms` and `hexForms` are what the matcher looks
 * for in the decoded and hex views of a text (views.ts): the plain text,
 * Latin-1, base64 and hex forms with whitespace removed, so the same secret
 * is found however a target wraps, escapes or re-cases it character by
 * character.
 *
 * Invariants:
 * - Pure: bytes in, strings out; no I/O, no caching of secret material.
 * - Secrets shorter than MIN_SUBSTRING_BYTES are only ever matched as whole
 *   values. Substring-matching "ab" would redact every "ab" in a response,
 *   destroying it, and the pattern of markers would itself reveal the secret
 *   to the agent (every place a marker appears spells it out).
 * - Derived forms that are shorter than their own minimum (base64 cores, PEM
 *   lines) are dropped rather than risk the same oracle.
 */

import { withoutWrapSpace } from './views.js';

export const MIN_SUBSTRING_BYTES = 4;
/** A base64 core shorter than this matches too much ordinary text. */
const MIN_BASE64_CORE_CHARS = 8;
/** Lines of a multi-line secret shorter than this are not matched on their own. */
const MIN_LINE_CHARS = 16;

export interface SecretForms {
  /** Forms to find anywhere inside a text. */
  readonly substrings: readonly string[];
  /** Forms that only count when a whole value (trimmed) equals them. */
  readonly wholeValues: readonly string[];
  /** Forms to find anywhere inside the decoded view of a text (no whitespace in them). */
  readonly viewForms: readonly string[];
  /** Lower-case hex forms to find anywhere inside the hex view of a text. */
  readonly hexForms: readonly string[];
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The secret as text, or null when its bytes are not valid UTF-8. */
function secretAsText(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}

/** Every form of `bytes` that Postern recognizes. Empty secrets have none. */
export function secretForms(bytes: Uint8Array): SecretForms {
  if (bytes.length === 0) return { substrings: [], wholeValues: [], viewForms: [], hexForms: [] };
  const forms = new Set<string>();
  const text = secretAsText(bytes);
  const texts = text === null ? [] : textVariants(text);
  for (const t of texts) forms.add(t);
  // Latin-1: the bytes as a server that mistook UTF-8 for ISO 8859-1 writes them back.
  forms.add(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'));
  for (const f of byteEncodings(bytes)) forms.add(f);
  for (const f of percentEncodings(bytes)) forms.add(f);
  if (text !== null) for (const f of htmlEscapes(text)) forms.add(f);
  for (const f of [...forms]) for (const j of jsonEscapes(f)) forms.add(j);
  forms.delete('');
  const all = [...forms];
  if (bytes.length < MIN_SUBSTRING_BYTES) return { substrings: [], wholeValues: all, viewForms: [], hexForms: [] };
  const { viewForms, hexForms } = plainForms(bytes, text);
  return { substrings: all, wholeValues: [], viewForms, hexForms };
}

/**
 * The forms a view can show: text, Latin-1 (percent-decoded bytes), base64
 * (with the cores at every offset) and hex, over the secret's bytes and,
 * for a multi-line secret, over its LF / CRLF spellings with and without a
 * final line break (a key file printed by `base64 FILE` on another system).
 */
function plainForms(bytes: Uint8Array, text: string | null): { viewForms: string[]; hexForms: string[] } {
  const spellings = [Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)];
  if (text !== null && /[\r\n]/.test(text)) {
    const lf = text.replace(/\r?\n/g, '\n');
    for (const t of [lf, lf.replace(/\n/g, '\r\n')]) for (const u of [t, t.replace(/(?:\r?\n)+$/, '')]) spellings.push(Buffer.from(u, 'utf8'));
  }
  const view = new Set<string>();
  const hex = new Set<string>();
  for (const b of spellings) {
    const t = secretAsText(b);
    if (t !== null) view.add(t);
    view.add(b.toString('latin1'));
    for (const f of base64Forms(b)) view.add(f);
    hex.add(b.toString('hex'));
  }
  const out = [...view].map(withoutWrapSpace).filter((f) => f.length >= MIN_SUBSTRING_BYTES);
  return { viewForms: [...new Set(out)], hexForms: [...hex] };
}

/** The text itself, plus line-ending variants and the lines of a multi-line secret. */
function textVariants(text: string): string[] {
  const out = [text];
  if (!/[\r\n]/.test(text)) return out;
  out.push(text.replace(/\r?\n/g, '\r\n'), text.replace(/\r?\n/g, '\n'), text.replace(/\r?\n/g, ''));
  for (const line of text.split(/\r?\n/)) {
    const trimmed = line.trim();
    // PEM armour lines are public boilerplate, not secret material.
    if (trimmed.length >= MIN_LINE_CHARS && !trimmed.startsWith('-----')) out.push(trimmed);
  }
  return out;
}

function byteEncodings(bytes: Uint8Array): string[] {
  const hex = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
  return [...base64Forms(bytes), hex, hex.toUpperCase()];
}

function base64Forms(bytes: Uint8Array): string[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const std = buf.toString('base64');
  const url = buf.toString('base64url');
  const out = [std, std.replace(/=+$/, ''), url, url + '='.repeat((4 - (url.length % 4)) % 4)];
  for (const core of base64Cores(bytes)) out.push(core, core.replace(/\+/g, '-').replace(/\//g, '_'));
  return out;
}

/**
 * When the secret sits at byte offset k (mod 3) inside a longer stream, the
 * base64 of that stream contains, for each k, a fixed run of characters made
 * only of the secret's bits. Matching those runs finds a secret echoed inside
 * a base64-encoded binary body or a base64 blob of a larger document.
 */
function base64Cores(bytes: Uint8Array): string[] {
  const out: string[] = [];
  for (let k = 0; k < 3; k++) {
    const shifted = Buffer.alloc(k + bytes.length);
    shifted.set(bytes, k);
    const enc = shifted.toString('base64').replace(/=+$/, '');
    const core = enc.slice(Math.ceil((8 * k) / 6), Math.floor((8 * (k + bytes.length)) / 6));
    if (core.length >= MIN_BASE64_CORE_CHARS) out.push(core);
  }
  return out;
}

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const URI_COMPONENT_SAFE = ALNUM + "-_.!~*'()";
/** [characters kept verbatim, whether a space becomes '+'] for each flavour. */
const PERCENT_FLAVOURS: readonly (readonly [string, boolean])[] = [
  [URI_COMPONENT_SAFE, false], // encodeURIComponent
  [ALNUM + "-_.!~*'();,/?:@&=+$#", false], // encodeURI
  [ALNUM + '-._~', false], // RFC 3986 unreserved
  [ALNUM + '-._~/', false], // RFC 3986 unreserved, path-safe (Python quote)
  [ALNUM + '-._~', true], // Python quote_plus
  [ALNUM + '*-._', true], // application/x-www-form-urlencoded (WHATWG URLSearchParams)
  [URI_COMPONENT_SAFE, true], // encodeURIComponent then spaces as '+'
];

/**
 * encodeURIComponent over arbitrary bytes (valid UTF-8 or not): how the HTTP
 * executor writes a query credential, so it and its redaction agree.
 */
export function percentEncodeComponent(bytes: Uint8Array): string {
  return percentEncode(bytes, URI_COMPONENT_SAFE, false, false);
}

function percentEncode(bytes: Uint8Array, keep: string, spaceAsPlus: boolean, lowerHex: boolean): string {
  let out = '';
  for (const b of bytes) {
    const c = String.fromCharCode(b);
    if (b < 0x80 && keep.includes(c)) out += c;
    else if (b === 0x20 && spaceAsPlus) out += '+';
    else {
      const h = b.toString(16).padStart(2, '0');
      out += '%' + (lowerHex ? h : h.toUpperCase());
    }
  }
  return out;
}

/** Percent-encodings over the raw bytes, with upper- and lower-case hex digits. */
function percentEncodings(bytes: Uint8Array): string[] {
  return PERCENT_FLAVOURS.flatMap(([keep, plus]) => [percentEncode(bytes, keep, plus, false), percentEncode(bytes, keep, plus, true)]);
}

function htmlEscapes(text: string): string[] {
  if (!/[&<>"']/.test(text)) return [];
  const base = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  return [base.replace(/'/g, '&#39;'), base.replace(/'/g, '&#x27;'), base.replace(/'/g, '&apos;')];
}

/** JSON string escapes as JavaScript, PHP (escaped '/') and Python (ASCII-only) write them. */
function jsonEscapes(s: string): string[] {
  const std = JSON.stringify(s).slice(1, -1);
  const ascii = std.replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
  const asciiUpper = ascii.replace(/\\u([0-9a-f]{4})/g, (_m, h: string) => '\\u' + h.toUpperCase());
  const variants = [std, ascii, asciiUpper];
  return [...variants, ...variants.map((v) => v.replace(/\//g, '\\/'))];
}
