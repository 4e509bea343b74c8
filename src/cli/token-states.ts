/**
 * What `secret list` says about credentials exchanged for tokens (OAuth,
 * GitHub App): the running daemon holds the tokens, so their state — valid
 * until, last refresh, last error — is asked of it over the operator socket
 * (read-only, as an observer). Never a value. Without a daemon, it says so.
 */
import { lstat } from 'node:fs/promises';
import type { CredentialStateView } from '../protocol/operator/index.js';
import type { CredentialKind } from '../vault/types.js';
import { connectOperator } from '../protocol/operator/connect.js';

const MINTING_KINDS: ReadonlySet<CredentialKind> = new Set<CredentialKind>(['oauth_client_credentials', 'oauth_refresh_token', 'github_app']);

export function mintsTokens(kind: CredentialKind): boolean {
  return MINTING_KINDS.has(kind);
}

export type TokenStates = { readonly daemon: 'running'; readonly states: readonly CredentialStateView[] } | { readonly daemon: 'not_running' | 'unreachable' };

/** Asks the daemon for its token states; `key` is the operator key (zeroed by the caller). */
export async function tokenStates(socketPath: string, key: Uint8Array): Promise<TokenStates> {
  try {
    await lstat(socketPath);
  } catch {
    return { daemon: 'not_running' };
  }
  try {
    const conn = await connectOperator(socketPath, key, { role: 'observer' });
    try {
      return { daemon: 'running', states: await conn.request('credentials.state', {}) };
    } finally {
      conn.close();
    }
  } catch {
    return { daemon: 'unreachable' };
  }
}

/** One line per minting credential, for the text output of `secret list`. */
export function tokenStateLines(names: readonly string[], s: TokenStates): string[] {
  if (names.length === 0) return [];
  if (s.daemon !== 'running') {
    return [`token state: unknown — the daemon is ${s.daemon === 'not_running' ? 'not running' : 'not reachable'} (it holds the tokens it mints)`];
  }
  return names.map((name) => {
    const st = s.states.find((x) => x.name === name);
    if (st === undefined) return `${name}: no token minted since the daemon unlocked`;
    const parts = [`valid until ${st.valid_until ?? '-'}`, `last refresh ${st.last_refresh ?? '-'}`, `last error ${st.last_error === null ? '-' : `${st.last_error.code} at ${st.last_error.at}: ${st.last_error.message}`}`];
    return `${name}: ${parts.join('; ')}`;
  });
}
