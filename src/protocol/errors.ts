/**
 * The closed set of Postern error codes.
 *
 * Every failure that reaches a person or an agent carries one of these codes,
 * a one-line message a person understands, and the facts an agent needs:
 * whether a side effect started and what has to happen next. Messages never
 * contain secret material or stack traces. This file is data only: it is
 * imported by every layer, including the ones that must not see the vault.
 */

export const ErrorCodes = {
  // usage and local setup
  USAGE: { exit: 2, action: 'fix_arguments', summary: 'the command was used incorrectly' },
  HOME_UNSAFE: { exit: 1, action: 'fix_permissions', summary: 'the Postern home has unsafe ownership or permissions' },
  PASSPHRASE_REQUIRED: { exit: 1, action: 'provide_passphrase', summary: 'a passphrase is needed and none could be read' },
  PASSPHRASE_WEAK: { exit: 1, action: 'choose_longer_passphrase', summary: 'the passphrase is too short' },
  PASSPHRASE_MISMATCH: { exit: 1, action: 'retry', summary: 'the two passphrases differ' },
  INPUT_INVALID: { exit: 1, action: 'fix_input', summary: 'an input value is invalid' },

  // vault
  VAULT_NOT_FOUND: { exit: 1, action: 'run_postern_init', summary: 'no vault exists in this home' },
  VAULT_EXISTS: { exit: 1, action: 'none', summary: 'a vault already exists in this home' },
  VAULT_AUTH: { exit: 1, action: 'check_passphrase', summary: 'wrong passphrase, or the vault file was modified' },
  VAULT_CORRUPT: { exit: 1, action: 'restore_backup', summary: 'the vault file is malformed' },
  VAULT_LOCKED: { exit: 1, action: 'unlock_vault', summary: 'the vault is locked' },
  VAULT_BUSY: { exit: 1, action: 'retry_later', summary: 'another process is writing the vault' },
  VAULT_PERMISSIONS: { exit: 1, action: 'fix_permissions', summary: 'the vault file or its directory is readable by others' },
  VAULT_IO: { exit: 1, action: 'check_disk', summary: 'the vault file could not be read or written' },
  SECRET_NOT_FOUND: { exit: 1, action: 'check_secret_name', summary: 'no secret with that name' },
  SECRET_EXISTS: { exit: 1, action: 'use_rotate', summary: 'a secret with that name already exists' },
  SECRET_INVALID: { exit: 1, action: 'fix_secret', summary: 'the secret value is not valid for its kind' },

  // catalog and contracts
  CATALOG_NOT_FOUND: { exit: 1, action: 'create_catalog', summary: 'no catalog file exists' },
  CATALOG_INVALID: { exit: 1, action: 'fix_catalog', summary: 'the catalog file is invalid' },
  CATALOG_PENDING: { exit: 1, action: 'run_postern_catalog_accept', summary: 'the catalog file changed and was not accepted' },
  CATALOG_UNAUTHENTICATED: { exit: 1, action: 'run_postern_catalog_accept', summary: 'the accepted-catalog record does not authenticate' },
  RELEASE_GATE_FAILED: { exit: 1, action: 'add_policy_or_rename', summary: 'the catalog change is unsafe for existing clients' },
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

/** Facts attached to an error; values must never contain secret material. */
export type ErrorDetails = Readonly<Record<string, string | number | boolean | null | readonly string[]>>;

/**
 * A typed, expected failure. `message` is one human line; `details` are facts.
 * `cause` keeps the underlying error for debugging but is never printed.
 */
export class PosternError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  readonly sideEffectStarted: boolean;

  constructor(
    code: ErrorCode,
    message: string,
    opts: { details?: ErrorDetails; sideEffectStarted?: boolean; cause?: unknown } = {},
  ) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'PosternError';
    this.code = code;
    this.details = opts.details ?? {};
    this.sideEffectStarted = opts.sideEffectStarted ?? false;
  }

  get requiredAction(): string {
    return ErrorCodes[this.code].action;
  }
}

export function isPosternError(e: unknown, code?: ErrorCode): e is PosternError {
  return e instanceof PosternError && (code === undefined || e.code === code);
}
