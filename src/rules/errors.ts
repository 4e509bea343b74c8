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
  TUI_NO_TTY: { exit: 2, action: 'run_in_a_terminal', summary: 'the terminal UI needs an interactive terminal' },

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
  SECRET_IN_USE: { exit: 1, action: 'confirm_removal', summary: 'the accepted catalog uses this secret; removal needs confirmation' },

  // catalog and contracts
  CATALOG_NOT_FOUND: { exit: 1, action: 'create_catalog', summary: 'no catalog file exists' },
  CATALOG_INVALID: { exit: 1, action: 'fix_catalog', summary: 'the catalog file is invalid' },
  CATALOG_PENDING: { exit: 1, action: 'run_postern_catalog_accept', summary: 'the catalog file changed and was not accepted' },
  CATALOG_UNAUTHENTICATED: { exit: 1, action: 'run_postern_catalog_accept', summary: 'the accepted-catalog record does not authenticate' },
  CATALOG_ROLLED_BACK: { exit: 1, action: 'run_postern_catalog_accept', summary: 'an older accepted catalog (or an older vault) was put back' },
  HOST_CONFIG_CONFLICT: { exit: 1, action: 'review_host_config', summary: "the agent host's configuration already has a different postern entry" },
  RELEASE_GATE_FAILED: { exit: 1, action: 'add_policy_or_rename', summary: 'the catalog change is unsafe for existing clients' },

  // files
  FILE_IO: { exit: 1, action: 'check_disk', summary: 'a file could not be read or written' },
  CHANGE_RECORD_INVALID: { exit: 1, action: 'restore_backup', summary: 'a pending change record in the home is malformed' },

  // daemon, sessions and the call pipeline (tool errors carry these in structuredContent)
  DAEMON_UNAVAILABLE: { exit: 1, action: 'start_daemon', summary: 'the Postern daemon is not running' },
  DAEMON_RUNNING: { exit: 1, action: 'none', summary: 'a daemon is already running for this home' },
  SHUTTING_DOWN: { exit: 1, action: 'retry_later', summary: 'the daemon is shutting down' },
  REQUEST_TOO_LARGE: { exit: 1, action: 'reduce_request', summary: 'the request is too large or too deeply nested' },
  TOOL_NOT_FOUND: { exit: 1, action: 'refresh_tool_list', summary: 'no such tool' },
  AGENT_USER_NOT_ALLOWED: { exit: 1, action: 'ask_operator', summary: 'this OS user may not reach the agent socket or call this tool' },
  VALIDATION_FAILED: { exit: 1, action: 'fix_arguments', summary: 'the arguments do not match the tool schema' },
  CONTRACT_STALE: { exit: 1, action: 'refresh_tool_list', summary: 'the tool changed since this session listed it' },
  REVISION_RETIRED: { exit: 1, action: 'use_replacement_tool', summary: 'this tool revision is retired' },
  SECRET_IN_ARGUMENTS: { exit: 1, action: 'remove_secret_from_arguments', summary: 'the arguments contain a vault secret' },
  IDEMPOTENCY_KEY_REQUIRED: { exit: 1, action: 'add_idempotency_key', summary: 'this tool needs an idempotency_key' },
  IDEMPOTENCY_KEY_CONFLICT: { exit: 1, action: 'use_new_idempotency_key', summary: 'the idempotency key was used with other arguments' },
  IDEMPOTENCY_KEY_EXPIRED: { exit: 1, action: 'use_new_idempotency_key', summary: 'the idempotency key is past its retention window' },
  RATE_LIMITED: { exit: 1, action: 'wait_retry_after_or_ask_operator', summary: 'a limit of the tool (per minute, session, run or in flight) is reached; nothing was run' },
  CALL_IN_PROGRESS: { exit: 1, action: 'wait_and_check_status', summary: 'a call with this idempotency key is in progress' },
  // `effect: 'unknown'`: whatever the caller passes, the envelope says `side_effect_started: null` (protocol/tool-result.ts).
  OUTCOME_UNKNOWN: { exit: 1, action: 'ask_operator', summary: 'an earlier call with this key may or may not have run', effect: 'unknown' },
  CALL_NOT_FOUND: { exit: 1, action: 'none', summary: 'no call with that idempotency key' },
  APPROVAL_DENIED: { exit: 1, action: 'ask_operator', summary: 'the operator denied the call' },
  APPROVAL_TIMEOUT: { exit: 1, action: 'retry_when_operator_present', summary: 'nobody approved the call in time' },
  APPROVAL_UNAVAILABLE: { exit: 1, action: 'add_preapproval_rule_or_run_attended', summary: 'the daemon runs unattended and no pre-approval rule approves this call' },
  APPROVAL_PENDING: { exit: 1, action: 'call_again_with_same_arguments', summary: 'the operator has not decided yet; the approval stays open' },
  CALL_CANCELLED: { exit: 1, action: 'none', summary: 'the client cancelled the call before it ran' },
  TASK_NOT_FOUND: { exit: 1, action: 'none', summary: 'no task with that id in this session (unknown, expired, or from another session)' },
  TASK_ALREADY_ENDED: { exit: 1, action: 'get_task_result', summary: 'the task has already ended, so it cannot be cancelled' },
  TASK_LIMIT_REACHED: { exit: 1, action: 'wait_for_a_task', summary: 'this session has as many running tasks as it may' },
  TASK_NOT_SUPPORTED: { exit: 1, action: 'call_without_task', summary: 'this tool does not run as a task' },
  APPROVAL_MISMATCH: { exit: 1, action: 'request_new_approval', summary: 'the call differs from what was approved' },
  APPROVAL_UNSEEN: { exit: 1, action: 'show_the_whole_card_then_approve', summary: 'the card is too large for one view and the approval does not say its whole presentation was seen: nothing was approved' },
  JOURNAL_UNAVAILABLE: { exit: 1, action: 'check_journal', summary: 'the journal cannot be written, so nothing was run' },
  JOURNAL_DAMAGED: {
    exit: 1,
    action: 'operator_must_restore_journal',
    summary: 'a journal file has damaged pages that cannot be read, so nothing was run; the operator must restore or replace it',
  },
  JOURNAL_ANCHOR_MISMATCH: {
    exit: 1,
    action: 'restore_journal_or_run_postern_anchor_new_journal',
    summary: 'the journal does not match its anchor: it was removed, emptied, replaced, rolled back or rewritten',
  },
  JOURNAL_TAMPERED: {
    exit: 1,
    action: 'restore_journal_or_run_postern_anchor_new_journal',
    summary: 'the journal was edited outside Postern where its anchor does not reach (the idempotency claims, or entries since the last proof)',
  },
  SHIP_UNAVAILABLE: { exit: 1, action: 'check_database', summary: 'the PostgreSQL database journals are shipped to cannot be reached, or refused the shipping role' },
  SHIP_CONFLICT: { exit: 1, action: 'investigate_shipped_rows', summary: 'the database already holds a different row for an entry this home ships: it is reported, never overwritten' },
  SHIP_GAP: { exit: 1, action: 'none', summary: 'entries were pruned from the local journal before they were shipped: the shipped chain has a gap from there' },
  AUDIT_BUNDLE_INVALID: { exit: 1, action: 'obtain_an_unaltered_bundle', summary: 'the audit bundle does not verify: it was altered, truncated or is not a bundle' },
  VAULT_ROLLED_BACK: { exit: 1, action: 'restore_vault_or_run_postern_anchor_accept_vault', summary: 'the vault is an older generation than the last one seen' },
  CREDENTIAL_MISSING: { exit: 1, action: 'add_secret', summary: 'the credential named by the catalog is not in the vault' },
  CREDENTIAL_KIND_MISMATCH: { exit: 1, action: 'fix_credential_kind', summary: 'the credential is not of the kind (or name) its target needs' },
  CREDENTIAL_REJECTED: {
    exit: 1,
    action: 'operator_must_fix_credential',
    summary: 'the token endpoint refused the credential; calls that need it fail until the operator rotates it (or fixes the target)',
  },
  CREDENTIAL_UNAVAILABLE: { exit: 1, action: 'retry_later', summary: 'no access token could be obtained right now (the token endpoint failed or did not answer); nothing was sent' },
  EGRESS_BLOCKED: { exit: 1, action: 'fix_catalog_target', summary: 'the connection was refused by egress policy' },
  TARGET_TIMEOUT: { exit: 1, action: 'check_call_status', summary: 'the target did not answer in time' },
  TARGET_ERROR: { exit: 1, action: 'check_target', summary: 'the target could not be reached or failed' },
  OUTPUT_CONTRACT_MISMATCH: {
    exit: 1,
    action: 'refresh_tool_list_and_do_not_repeat',
    summary: 'the action ran, but its result does not match the output schema of the revision the call was planned against',
  },
  RESPONSE_TOO_LARGE: { exit: 1, action: 'narrow_request', summary: 'the response exceeded the size limit' },
  HOST_KEY_UNKNOWN: { exit: 1, action: 'run_postern_ssh_trust', summary: 'the SSH host key is not pinned yet' },
  HOST_KEY_MISMATCH: { exit: 1, action: 'verify_host_key', summary: 'the SSH host key differs from the pinned one' },
  HTTP_AUTH_REQUIRED: { exit: 1, action: 'send_bearer_token', summary: "the HTTP listener needs its bearer token (run/mcp-http.token in the Postern home)" },
  HTTP_REFUSED: { exit: 1, action: 'fix_request', summary: 'the HTTP listener refused the request (its host, origin, method, path or content type)' },
  HTTP_LISTEN_FAILED: { exit: 1, action: 'choose_another_port', summary: 'the HTTP listener could not bind its port on 127.0.0.1' },
  GATEWAY_REFUSED: { exit: 1, action: 'ask_operator_to_extend_catalog', summary: 'the SSH gateway refused the request: the catalog does not name that target, repository, direction or command, or the client asked for a shell, a PTY, forwarding or a subsystem' },
  GATEWAY_LISTEN_FAILED: { exit: 1, action: 'choose_another_port', summary: 'the SSH gateway could not bind its port on 127.0.0.1' },
  HTTP_SESSION_LIMIT: { exit: 1, action: 'close_a_session_or_retry_later', summary: 'the HTTP listener has as many sessions open as it allows' },
  OPERATOR_AUTH_FAILED: { exit: 1, action: 'check_passphrase', summary: 'the operator could not be authenticated' },
  OBSERVER_READ_ONLY: { exit: 1, action: 'attach_as_operator', summary: 'an observer connection cannot decide or change anything' },
  OPERATOR_TOO_SLOW: { exit: 1, action: 'reattach', summary: 'the operator connection fell too far behind the daemon\'s events and was dropped' },
  APPROVAL_NOT_FOUND: { exit: 1, action: 'list_approvals', summary: 'no pending approval with that id' },
  PAGE_REFUSED: { exit: 1, action: 'open_the_page_at_its_own_address', summary: 'the approval page refused the request (its host, origin, method, path, content type or page token)' },
  DEVICE_UNPAIRED: { exit: 1, action: 'run_postern_approvals_pair', summary: 'the browser is not a paired device (never paired, or revoked)' },
  DEVICE_PROOF_INVALID: { exit: 1, action: 'reload_the_page', summary: "the request's device proof does not hold (its signature, the page's token, the daemon run or a used counter): nothing was done" },
  DEVICE_NOT_FOUND: { exit: 1, action: 'list_devices', summary: 'no paired device with that id' },
  PAIRING_REFUSED: { exit: 1, action: 'run_postern_approvals_pair', summary: 'the pairing code is wrong, used or expired' },
  PAGE_RATE_LIMITED: { exit: 1, action: 'wait_and_retry', summary: 'too many pairing attempts or decisions from this device or address in a minute' },
  DECISION_STALE: { exit: 1, action: 'review_the_card_again', summary: 'the card changed while it was open (its contract changed): nothing was decided' },
  DECISION_REPLAYED: { exit: 1, action: 'reload_the_page', summary: 'this decision was already sent once (its nonce is used): nothing was decided again' },
  DECISION_NONCE_INVALID: { exit: 1, action: 'reload_the_page', summary: 'the decision does not carry a nonce issued for this card and device: nothing was decided' },
  PRESENCE_REQUIRED: { exit: 1, action: 'approve_with_a_passkey', summary: 'the tool needs presence: an approval on the page must carry a passkey assertion, and this one carries none: nothing was approved' },
  PRESENCE_INVALID: { exit: 1, action: 'reload_the_page', summary: 'the passkey assertion (or registration) does not verify for this device, card, daemon run and decision: nothing was approved' },
  PRESENCE_UNAVAILABLE: { exit: 1, action: 'open_the_page_on_localhost_or_approve_in_the_tui', summary: 'passkeys cannot be used on the page at this address (an IP address is not a WebAuthn relying-party id): nothing was approved' },
  PAGE_LISTEN_FAILED: { exit: 1, action: 'choose_another_port', summary: 'the authorized approval page could not bind its address and port' },
  INTERNAL: { exit: 1, action: 'report_bug', summary: 'an unexpected internal failure' },

  // postern demo
  DEMO_FAILED: { exit: 1, action: 'report_bug', summary: 'a step of `postern demo` did not behave as the story expects' },
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

/** Facts attached to an error; values must never contain secret material. */
type ErrorDetails = Readonly<Record<string, string | number | boolean | null | readonly string[]>>;

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
