/**
 * JSON for the journals: checked serialization of stored values, and the
 * canonical form the hash chain is computed over.
 *
 * Invariants:
 * - `toJsonText` stores a value as JSON.stringify would, keeping key order as
 *   received (raw arguments are kept "exactly as received"), but refuses
 *   anything JSON cannot represent faithfully — bigint, functions, symbols,
 *   non-finite numbers, class instances, cycles — with INTERNAL, so a stored
 *   entry always reads back as the value that was given;
 * - `canonicalJson` is the one canonical encoding (src/rules/canonical.ts)
 *   with the journal's rules, so the same content always yields the same bytes
 *   and the same hash.
 */
import { canonicalJson as canonicalWith, JOURNAL_RULES, sha256Hex } from '../rules/canonical.js';
import { PosternError } from '../rules/errors.js';

const MAX_DEPTH = 256;

function refuse(path: string, what: string): never {
  throw new PosternError('INTERNAL', `journal value at ${path} is ${what}, not JSON data`, { details: { path } });
}

function check(value: unknown, path: string, depth: number, ancestors: Set<object>): void {
  switch (typeof value) {
    case 'string':
    case 'boolean':
    case 'undefined':
      return;
    case 'number':
      if (!Number.isFinite(value)) refuse(path, 'a non-finite number');
      return;
    case 'bigint':
    case 'function':
    case 'symbol':
      refuse(path, `a ${typeof value}`);
      break;
    case 'object': {
      if (value === null) return;
      if (depth > MAX_DEPTH) refuse(path, 'nested too deeply');
      if (ancestors.has(value)) refuse(path, 'a cycle');
      const proto: unknown = Object.getPrototypeOf(value);
      const isArray = Array.isArray(value);
      if (!isArray && proto !== Object.prototype && proto !== null) refuse(path, 'a class instance');
      ancestors.add(value);
      if (isArray) {
        value.forEach((v, i) => check(v, `${path}[${i}]`, depth + 1, ancestors));
      } else {
        for (const [k, v] of Object.entries(value)) check(v, `${path}.${k}`, depth + 1, ancestors);
      }
      ancestors.delete(value);
      return;
    }
  }
}

/** Serializes plain JSON data, refusing values that would not round-trip. */
export function toJsonText(value: unknown): string {
  check(value, '$', 0, new Set());
  return JSON.stringify(value) ?? 'null';
}

/** The chain's canonical JSON (src/rules/canonical.ts with the journal's rules), after the same checks as storage. */
export function canonicalJson(value: unknown): string {
  check(value, '$', 0, new Set());
  return canonicalWith(value, JOURNAL_RULES);
}

export { sha256Hex };
