/**
 * The one rule for query parameter names that a server could read as another
 * name: the credential's parameter (`auth: { query: NAME }`) and the
 * parameters frameworks take as a method override (`_method`, …).
 *
 * A server may percent-decode a name once or more (`api%5Fkey`), read `+` as a
 * space, cut it at NUL, drop format characters, trim whitespace, fold it with
 * NFKC (fullwidth `ａｐｉ＿ｋｅｙ`) and case (`API_KEY`, Turkish `ı` and `İ`, long `ſ`;
 * combining marks are dropped),
 * map `.`, space and `[` to `_` (PHP), strip array or object suffixes
 * (`api_key[]`, `api_key[0]`, `api_key.x`), or split a decoded name at `&`,
 * `;` or `=`. `queryNameForms` lists every name one query name can become;
 * two names collide when any form of one equals the other's key.
 *
 * Invariants: pure; fail closed (a name that might collide is refused — `-`
 * is folded like `_`, a little wider than any one server); used by the
 * catalog, the resolver of agent queries and the HTTP executor alike.
 */
import { decodedForms } from './percent-readings.js';

const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
const MARKS = /\p{M}/gu;
const EDGE_SPACE = /^[\p{White_Space}\p{Cc}]+|[\p{White_Space}\p{Cc}]+$/gu;
/** Characters servers fold into `_` (PHP: space, `.`, `[`; plus `+` read as space, `-` for caution, other spaces and controls). */
const TO_UNDERSCORE = /[\p{White_Space}\p{Cc}.[+-]/gu;

/** The comparison key of one plain name (no splitting, no suffix stripping). */
export function queryNameKey(name: string): string {
  let s = name.normalize('NFKC').replace(INVISIBLE, '');
  // Upper then lower case: `ı`, `ſ` and the Kelvin sign meet their ASCII letters; marks are
  // dropped so that `İ` (Java lower-cases it to `i`) meets `i` too.
  s = s.toUpperCase().toLowerCase().normalize('NFKD').replace(MARKS, '').normalize('NFKC');
  return s.replace(EDGE_SPACE, '').replace(TO_UNDERSCORE, '_');
}

/** Every key a server could make of `name`. */
export function queryNameForms(name: string): ReadonlySet<string> {
  const out = new Set<string>();
  const readings = new Set<string>();
  for (const r of decodedForms(name)) {
    readings.add(r);
    readings.add(r.replaceAll('+', ' '));
  }
  for (const reading of readings) {
    const nul = reading.indexOf('\u0000');
    const whole = [reading, ...(nul === -1 ? [] : [reading.slice(0, nul)])];
    for (const w of whole) {
      for (const piece of [w, ...w.split(/[&;=]/)]) {
        const trimmed = piece.replace(INVISIBLE, '').replace(EDGE_SPACE, '');
        out.add(queryNameKey(trimmed));
        for (const cut of ['[', '.']) {
          const at = trimmed.indexOf(cut);
          if (at > 0) out.add(queryNameKey(trimmed.slice(0, at)));
        }
      }
    }
  }
  return out;
}

/** Whether a server could read query name `name` as `reserved`. */
export function queryNameCollides(name: string, reserved: string): boolean {
  return queryNameForms(name).has(queryNameKey(reserved));
}

/** Query parameters that frameworks (Rails, Laravel/Symfony, Express method-override, …) read as the request method. */
export const METHOD_OVERRIDE_PARAMS: readonly string[] = ['_method', 'x-http-method-override', 'x-http-method', 'x-method-override'];

/** The method-override parameter that `name` may be read as, or undefined. */
export function methodOverrideParam(name: string): string | undefined {
  const forms = queryNameForms(name);
  return METHOD_OVERRIDE_PARAMS.find((p) => forms.has(queryNameKey(p)));
}
