/**
 * How deep a JSON document nests, measured on its text without parsing it.
 * Results deeper than MAX_RESULT_JSON_DEPTH are kept as text: a parsed value
 * that deep would make every recursive step after it (redaction, schema
 * checks, canonical digests, the journal's checks) fail or exhaust the stack,
 * and a call whose effect happened must still answer with its facts.
 */

/** Deep enough for any real API; far below what the journal (256) and the stack allow. */
export const MAX_RESULT_JSON_DEPTH = 128;

/** True when `text` opens more than `max` arrays/objects inside one another. Pure, one pass. */
export function exceedsJsonDepth(text: string, max: number = MAX_RESULT_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}
