/**
 * What a well-formed credential is: name syntax, public fields, and which
 * secret parts a kind holds. One set of rules serves two callers — input from
 * the CLI (`add`/`rotate`, rejected as INPUT_INVALID / SECRET_INVALID) and
 * records decoded from a vault file (rejected as VAULT_CORRUPT) — so a vault
 * can never hold a credential that `add` would refuse.
 *
 * Problems are returned as one-line reasons that name fields and part names,
 * never values.
 */
import { PosternError } from '../rules/errors.js';
import type { CredentialKind } from './types.js';
import { CredentialKinds, isCredentialKind } from './types.js';

export const CREDENTIAL_NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const FIELD_KEY = /^[a-z][a-z0-9_]{0,31}$/;
const MAX_FIELDS = 16;
const MAX_FIELD_VALUE_CHARS = 1024;
export const MAX_SECRET_PART_BYTES = 64 * 1024;
// C0 controls, DEL and C1 controls: fields end up in HTTP headers and on screens.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

export function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || !CREDENTIAL_NAME.test(name)) {
    return 'a credential name must match ^[a-z0-9][a-z0-9._-]{0,63}$';
  }
  return null;
}

export function kindProblem(kind: unknown): string | null {
  if (typeof kind !== 'string' || !isCredentialKind(kind)) {
    return `unknown credential kind (expected one of ${Object.keys(CredentialKinds).join(', ')})`;
  }
  return null;
}

export function fieldsProblem(kind: CredentialKind, fields: Readonly<Record<string, unknown>>): string | null {
  const keys = Object.keys(fields);
  if (keys.length > MAX_FIELDS) return `at most ${MAX_FIELDS} fields are allowed`;
  for (const key of keys) {
    if (!FIELD_KEY.test(key)) return `field name '${key.slice(0, 40)}' must match ^[a-z][a-z0-9_]{0,31}$`;
    const value = fields[key];
    if (typeof value !== 'string') return `field '${key}' must be a string`;
    if (value.length > MAX_FIELD_VALUE_CHARS) return `field '${key}' is longer than ${MAX_FIELD_VALUE_CHARS} characters`;
    if (CONTROL_CHARS.test(value)) return `field '${key}' contains control characters`;
  }
  for (const required of CredentialKinds[kind].requiredFields as readonly string[]) {
    if (!Object.hasOwn(fields, required) || fields[required] === '') {
      return `a ${kind} credential needs the field '${required}'`;
    }
  }
  return null;
}

/** Part names must be the kind's parts, with every non-optional one present. */
export function secretPartsProblem(kind: CredentialKind, partNames: readonly string[]): string | null {
  const allowed = CredentialKinds[kind].secretParts as readonly string[];
  const optional = CredentialKinds[kind].optionalSecretParts as readonly string[];
  for (const part of partNames) {
    if (!allowed.includes(part)) {
      return `a ${kind} credential has no secret part '${part.slice(0, 40)}' (parts: ${allowed.join(', ')})`;
    }
  }
  for (const part of allowed) {
    if (!optional.includes(part) && !partNames.includes(part)) return `a ${kind} credential needs the secret part '${part}'`;
  }
  return null;
}

/** The part a remembered minted token is kept under. */
export const MINTED_PART = 'access_token';

/** The parts a remembered value may hold: its kind's parts, or `access_token` (a token minted from it); at least one. */
export function rememberedPartsProblem(kind: CredentialKind, partNames: readonly string[]): string | null {
  const allowed = [...(CredentialKinds[kind].secretParts as readonly string[]), MINTED_PART];
  if (partNames.length === 0) return 'a remembered value needs a secret part';
  const bad = partNames.find((p) => !allowed.includes(p));
  return bad === undefined ? null : `a remembered ${kind} value has no secret part '${bad.slice(0, 40)}' (parts: ${allowed.join(', ')})`;
}


function invalid(reason: string): PosternError {
  return new PosternError('INPUT_INVALID', reason, { details: { reason } });
}

export function assertValidName(name: unknown): asserts name is string {
  const problem = nameProblem(name);
  if (problem !== null) throw invalid(problem);
}

export function assertValidKind(kind: unknown): asserts kind is CredentialKind {
  const problem = kindProblem(kind);
  if (problem !== null) throw invalid(problem);
}

export function assertValidFields(kind: CredentialKind, fields: unknown): asserts fields is Record<string, string> {
  if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) throw invalid('fields must be an object of strings');
  const problem = fieldsProblem(kind, fields as Record<string, unknown>);
  if (problem !== null) throw invalid(problem);
}

/** Checks part names (INPUT_INVALID) and part sizes (SECRET_INVALID); values are never inspected otherwise. */
export function assertValidSecret(kind: CredentialKind, secret: unknown): asserts secret is Record<string, Uint8Array> {
  if (typeof secret !== 'object' || secret === null || Array.isArray(secret)) throw invalid('secret must be an object of byte arrays');
  const parts = Object.keys(secret);
  const problem = secretPartsProblem(kind, parts);
  if (problem !== null) throw invalid(problem);
  for (const part of parts) {
    const value = (secret as Record<string, unknown>)[part];
    if (!(value instanceof Uint8Array)) throw invalid(`secret part '${part}' must be a Uint8Array`);
    if (value.length > MAX_SECRET_PART_BYTES) {
      throw new PosternError('SECRET_INVALID', `secret part '${part}' is larger than ${MAX_SECRET_PART_BYTES} bytes`, {
        details: { part, limit: MAX_SECRET_PART_BYTES },
      });
    }
  }
}
