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
 * `queryNameProblem` is the rule for what a query name may contain at all:
 * no URL delimiter (RFC 3986 gen-delims and sub-delims: `#` ends the query,
 * `&` `;` `=` split it, `+` is a space, `?` `/` `:` `@` belong to other parts
 * of a URL, and `! $ ' ( ) * ,` are delimiters a server may give meaning to),
 * no `%` (a name is given decoded; an escape in it decodes differently from
 * server to server), none of the characters a URL may not hold unescaped
 * (space, double quote, backtick, `< > \ ^ { | }`), no control, separator, format, invisible,
 * private-use or unassigned character, neither as written nor in its NFKC form
 * (a fullwidth `＃` is `#` to a server that folds it). `[` and `]` appear only
 * as a suffix (`ids[]`, `filter[state]`, `a[b][c]`); `$` only once, first, before
 * a letter (OData's `$filter`, `$select`).
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
const METHOD_OVERRIDE_PARAMS: readonly string[] = ['_method', 'x-http-method-override', 'x-http-method', 'x-method-override'];

/** The method-override parameter that `name` may be read as, or undefined. */
export function methodOverrideParam(name: string): string | undefined {
  const forms = queryNameForms(name);
  return METHOD_OVERRIDE_PARAMS.find((p) => forms.has(queryNameKey(p)));
}

/** A leading `$` before an ASCII letter (OData: `$filter`), the one `$` a name may hold. */
const ODATA_PREFIX = /^\$(?=[A-Za-z])/;
/** RFC 3986 gen-delims and sub-delims, plus `%`. */
const URL_DELIMITERS = new Set(":/?#[]@!$&'()*+,;=%");
/** What a URL may never hold unescaped (RFC 3986 §2, RFC 1738's unsafe characters). */
const URL_UNSAFE = new Set(' "<>\\^`{|}');
const INVISIBLE_OR_UNSAFE = /[\p{Cc}\p{Cf}\p{Z}\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cs}\p{Co}\p{Cn}]/u;
/** A name with bracket suffixes: a base, then `[...]` groups holding no bracket. */
const WITH_SUFFIXES = /^([^[\]]+)((?:\[[^[\]]*\])*)$/;

const codePoint = (ch: string): string => `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Why `name` may not be a query parameter name (one phrase, to follow "the
 * name …"), or undefined when it may. Names only characters from the closed
 * sets above, never the name itself.
 */
export function queryNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  for (const form of new Set([name, name.normalize('NFKC')])) {
    const parts = WITH_SUFFIXES.exec(form);
    if (parts === null) return 'uses [ or ] other than in a suffix such as ids[] or filter[state]';
    // OData's system query options (`$filter`, `$select`, `$top`): one leading `$` before a letter
    // splits nothing and ends nothing in any query parser, so it is the one place `$` may stand.
    const base = (parts[1] ?? '').replace(ODATA_PREFIX, '');
    for (const ch of `${base}${(parts[2] ?? '').replace(/[[\]]/g, '')}`) {
      if (URL_DELIMITERS.has(ch)) return `contains ${ch}, a URL delimiter`;
      if (URL_UNSAFE.has(ch)) return `contains ${ch === ' ' ? 'a space' : ch}, which a URL may not hold unescaped`;
      if (INVISIBLE_OR_UNSAFE.test(ch)) return `contains ${codePoint(ch)}, a control, space, invisible or unassigned character`;
    }
  }
  return undefined;
}
