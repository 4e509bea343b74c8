/**
 * Validation of the audit's query filters, shared by both journals.
 *
 * Invariants: a limit is a positive integer, capped so one query cannot pull
 * an unbounded journal into memory; a time bound is normalized to the ISO form
 * the journals store (`Date.toISOString`), so comparing strings compares times.
 */
import { PosternError } from '../rules/errors.js';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10_000;

export function clampLimit(limit: number | undefined, fallback = DEFAULT_LIMIT): number {
  if (limit === undefined) return fallback;
  if (!Number.isInteger(limit) || limit < 1) throw new PosternError('INPUT_INVALID', `limit must be a positive integer, got ${String(limit)}`);
  return Math.min(limit, MAX_LIMIT);
}

export function isoBound(name: string, value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  const t = new Date(value);
  if (Number.isNaN(t.getTime())) throw new PosternError('INPUT_INVALID', `${name} is not a date: ${JSON.stringify(value).slice(0, 60)}`);
  return t.toISOString();
}
