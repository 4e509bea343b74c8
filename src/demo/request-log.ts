/**
 * The demo targets' request log: every request the in-process HTTP service
 * and SSH server received, in arrival order. Append-only: entries are frozen,
 * numbered from 1, and each is also appended as one JSON line to a file in
 * the demo home (opened for appending, mode 0600), so the story can prove
 * from the targets' own record what reached them — and what did not.
 *
 * Invariant: an entry never holds a credential. The services record whether
 * the credential they received was the right one (`auth`), never its value.
 */
import { appendFileSync } from 'node:fs';

export type RequestAuth = 'ok' | 'wrong' | 'missing';

export type LoggedRequest =
  | { readonly seq: number; readonly target: 'http'; readonly method: string; readonly path: string; readonly auth: RequestAuth; readonly idempotencyKey: string | null; readonly body: string }
  | { readonly seq: number; readonly target: 'ssh'; readonly user: string; readonly argv: readonly string[]; readonly auth: RequestAuth };

type NewRequest = LoggedRequest extends infer R ? (R extends LoggedRequest ? Omit<R, 'seq'> : never) : never;

export class RequestLog {
  readonly #entries: LoggedRequest[] = [];
  readonly #file: string;

  constructor(file: string) {
    this.#file = file;
  }

  append(entry: NewRequest): LoggedRequest {
    const logged = Object.freeze({ ...entry, seq: this.#entries.length + 1 }) as LoggedRequest;
    this.#entries.push(logged);
    appendFileSync(this.#file, `${JSON.stringify(logged)}\n`, { mode: 0o600, flag: 'a' });
    return logged;
  }

  get length(): number {
    return this.#entries.length;
  }

  /** A copy of the entries from `from` (a length seen earlier) on. */
  since(from: number): LoggedRequest[] {
    return this.#entries.slice(from);
  }

  all(): LoggedRequest[] {
    return [...this.#entries];
  }
}
