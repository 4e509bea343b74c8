/**
 * Canonical JSON: one byte string per JSON value, so that digests of call
 * arguments, authorities and approvals are stable across processes. Object
 * keys are sorted by UTF-16 code units, there is no whitespace, numbers use
 * the ECMAScript shortest form (-0 becomes 0) — the RFC 8785 (JCS) rules.
 * Anything that is not plain JSON (undefined, functions, symbols, bigint,
 * NaN/Infinity, class instances, cycles, lone surrogates) is refused rather
 * than silently dropped, because a dropped field would make two different
 * calls share one digest.
 *
 * The one home of this rule. The journals' hash chain uses the same encoding
 * with `JOURNAL_RULES`: members whose value is `undefined` are left out (an
 * optional field not given) and lone surrogates are escaped as JSON.stringify
 * escapes them (raw agent text is journaled exactly as received). For any value
 * without those, both give the same bytes.
 */
import { hash } from 'node:crypto';
import { PosternError } from './errors.js';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when the string can be encoded as UTF-8 without loss. */
export function isWellFormedText(s: string): boolean {
  return !LONE_SURROGATE.test(s);
}

interface CanonicalRules {
  /** Leave out object members (and write array holes as null) whose value is undefined, instead of refusing. */
  readonly dropUndefined: boolean;
  /** Escape lone surrogates (\udxxx) instead of refusing them. */
  readonly allowLoneSurrogates: boolean;
}

const STRICT: CanonicalRules = { dropUndefined: false, allowLoneSurrogates: false };
export const JOURNAL_RULES: CanonicalRules = Object.freeze({ dropUndefined: true, allowLoneSurrogates: true });

function fail(path: string, what: string): never {
  throw new PosternError('INPUT_INVALID', `not canonical JSON at ${path}: ${what}`);
}

function isPlainObject(v: object): boolean {
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function encodeString(s: string, path: string, rules: CanonicalRules): string {
  if (!rules.allowLoneSurrogates && !isWellFormedText(s)) fail(path, 'string contains a lone surrogate');
  return JSON.stringify(s);
}

function write(value: unknown, path: string, stack: Set<object>, out: string[], rules: CanonicalRules): void {
  switch (typeof value) {
    case 'string':
      out.push(encodeString(value, path, rules));
      return;
    case 'number':
      if (!Number.isFinite(value)) fail(path, `${String(value)} is not a JSON number`);
      out.push(Object.is(value, -0) ? '0' : JSON.stringify(value));
      return;
    case 'boolean':
      out.push(value ? 'true' : 'false');
      return;
    case 'object':
      break;
    case 'undefined':
      if (rules.dropUndefined) {
        out.push('null'); // only reached for array elements: members are skipped below
        return;
      }
      fail(path, 'undefined is not a JSON value');
      break;
    case 'bigint':
    case 'function':
    case 'symbol':
      fail(path, `${typeof value} is not a JSON value`);
  }
  if (value === null) {
    out.push('null');
    return;
  }
  if (stack.has(value)) fail(path, 'cycle');
  stack.add(value);
  if (Array.isArray(value)) {
    out.push('[');
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out.push(',');
      if (!Object.hasOwn(value, i) && !rules.dropUndefined) fail(`${path}[${i}]`, 'sparse array');
      write(value[i], `${path}[${i}]`, stack, out, rules);
    }
    out.push(']');
  } else {
    if (!isPlainObject(value)) fail(path, 'not a plain object');
    if (Object.getOwnPropertySymbols(value).length > 0) fail(path, 'symbol keys');
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj).sort().filter((k) => !(rules.dropUndefined && obj[k] === undefined));
    out.push('{');
    keys.forEach((k, i) => {
      if (i > 0) out.push(',');
      out.push(encodeString(k, path, rules), ':');
      write(obj[k], `${path}.${k}`, stack, out, rules);
    });
    out.push('}');
  }
  stack.delete(value);
}

/** The canonical JSON text of `value`; throws INPUT_INVALID for non-JSON values. */
export function canonicalJson(value: unknown, rules: CanonicalRules = STRICT): string {
  const out: string[] = [];
  write(value, '$', new Set(), out, rules);
  return out.join('');
}

/** Lowercase hex SHA-256 of a string (UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  // One-shot (no Hash object per call): the same bytes as createHash('sha256').update(data).digest('hex').
  return hash('sha256', data, 'hex');
}

/** Lowercase hex SHA-256 of the canonical JSON of `value`. */
export function canonicalDigest(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
