/**
 * The concrete action a call will perform, as the approval card shows it and
 * the executor runs it: no templates, no secrets, every byte decided. Values
 * are turned into text here in exactly one way (`scalarText`), and a value that
 * cannot be placed safely is refused with the field that caused it — never
 * repaired.
 */
import type { HostKey, HttpAuth, HttpMethod, JsonValue } from '../types.js';

export interface ResolvedHttp {
  readonly kind: 'http';
  readonly tool: string;
  readonly revision: number;
  readonly target: string;
  /** The credential's name; the executor injects it according to `auth`. */
  readonly credential: string;
  readonly auth: HttpAuth;
  readonly method: HttpMethod;
  readonly origin: string;
  readonly host: string;
  readonly port: number;
  /** Percent-encoded path. */
  readonly path: string;
  /** Decoded pairs in send order. */
  readonly query: readonly (readonly [string, string])[];
  /** origin + path + encoded query; never contains the credential. */
  readonly url: string;
  /** Lowercase names, send order, no credential header. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: JsonValue | undefined;
  /** The exact request body bytes (canonical JSON), when there is a body. */
  readonly bodyText: string | undefined;
}

export interface ResolvedSsh {
  readonly kind: 'ssh';
  readonly tool: string;
  readonly revision: number;
  readonly target: string;
  readonly credential: string;
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly hostKey: HostKey;
  readonly argv: readonly string[];
  /** argv, each entry POSIX single-quoted, joined by spaces: the exact remote command line. */
  readonly command: string;
}

export type ResolvedAction = ResolvedHttp | ResolvedSsh;

export type ResolveResult =
  | { readonly kind: 'resolved'; readonly action: ResolvedAction }
  | { readonly kind: 'refused'; readonly field: string; readonly problem: string };

/** Thrown inside the resolvers and turned into a `refused` result at the boundary. */
export class RefusedValue extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** The one text form of a scalar argument. */
export function scalarText(value: JsonValue | undefined, field: string): string {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
    case 'undefined':
    case 'bigint':
    case 'function':
    case 'symbol':
      throw new RefusedValue(field, 'must be a string, number or boolean here');
  }
}

/** POSIX single-quoting: the remote shell passes the bytes through unchanged. */
export function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}
