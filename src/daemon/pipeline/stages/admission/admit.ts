/**
 * Admission: bounds on what a call may carry before any other stage looks at
 * it — a JSON object, at most `maxBytes` serialized, at most `maxDepth` deep,
 * no `__proto__` / `constructor` / `prototype` keys anywhere (they mean
 * nothing to a tool and invite prototype pollution downstream).
 */
import { PosternError } from '../../../../rules/errors.js';

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

interface AdmitLimits {
  readonly maxBytes: number;
  readonly maxDepth: number;
}

function walk(v: unknown, depth: number, limits: AdmitLimits): void {
  if (depth > limits.maxDepth) {
    throw new PosternError('REQUEST_TOO_LARGE', `the arguments are nested deeper than ${limits.maxDepth} levels`);
  }
  if (Array.isArray(v)) {
    for (const x of v) walk(x, depth + 1, limits);
  } else if (typeof v === 'object' && v !== null) {
    for (const k of Object.keys(v)) {
      if (FORBIDDEN_KEYS.has(k)) throw new PosternError('VALIDATION_FAILED', `the key "${k}" is not allowed in arguments`, { details: { field: k } });
      walk((v as Record<string, unknown>)[k], depth + 1, limits);
    }
  }
}

/** Returns the arguments as a plain object, or throws a typed error. */
export function admitArguments(raw: unknown, limits: AdmitLimits): Record<string, unknown> {
  const args = raw === undefined ? {} : raw;
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new PosternError('VALIDATION_FAILED', 'the arguments must be a JSON object');
  }
  // A `__proto__` key that a parser turned into a prototype would slip past the key walk.
  const proto: unknown = Object.getPrototypeOf(args);
  if (proto !== Object.prototype && proto !== null) {
    throw new PosternError('VALIDATION_FAILED', 'the arguments must be a plain JSON object');
  }
  walk(args, 1, limits);
  const size = Buffer.byteLength(JSON.stringify(args), 'utf8');
  if (size > limits.maxBytes) {
    throw new PosternError('REQUEST_TOO_LARGE', `the arguments are ${size} bytes; the limit is ${limits.maxBytes}`);
  }
  return args as Record<string, unknown>;
}
