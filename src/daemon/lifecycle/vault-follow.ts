/**
 * Keeps a running daemon on the vault generation on disk. `postern secret
 * add|rotate|rm` save a new generation while the daemon runs; the daemon has
 * long forgotten the passphrase, so it re-reads the file with the data key it
 * holds (`reopenVault`) and adopts the newer generation.
 *
 * Invariants:
 * - refreshes run one after another; each one that starts after a save sees
 *   it (a call refreshes before it looks up its credential, so a call made
 *   after `secret rotate` returned uses the new value, whatever the watcher did);
 * - a file whose identity (device, inode, size, mtime, ctime) is the one last read
 *   is not read again (saves always rename a new file into place); with no
 *   refresh queued, that answer is given synchronously (one lstat, no wait);
 * - a newer generation is adopted, then `onChange` runs (close SSH connections
 *   of changed credentials, journal, log);
 * - anything else that is not the generation held — a file that no longer
 *   opens with this data key (a passphrase change that made a new data key, a
 *   replaced or modified file), an older generation (a restored copy), a
 *   missing, corrupt or unsafe file — locks the vault with a reason: calls then
 *   fail with VAULT_LOCKED telling the human to restart the daemon. Stale
 *   secrets are never used silently.
 */
import { lstatSync } from 'node:fs';
import { isPosternError } from '../../rules/errors.js';
import { reopenVault, type VaultOptions } from '../../vault/index.js';
import type { DaemonState, VaultChange } from '../services/state.js';

interface VaultFollowerOptions {
  readonly path: string;
  readonly state: DaemonState;
  readonly vault: VaultOptions;
  readonly onChange: (change: VaultChange) => void;
}

/** One lstat(2) on the loop: a few microseconds, far less than a round trip to the thread pool per call. */
function identityOf(path: string): string | null {
  try {
    const st = lstatSync(path, { bigint: true });
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return null;
  }
}

/** Why a vault file that is not the generation held cannot be used, for the lock reason. */
function refusal(e: unknown): string {
  if (isPosternError(e, 'VAULT_AUTH')) return 'the vault file no longer opens with the key this daemon holds (new passphrase and data key, or a modified file)';
  if (isPosternError(e, 'VAULT_NOT_FOUND')) return 'the vault file is gone';
  if (isPosternError(e)) return `the vault file cannot be read again (${e.code})`;
  return 'the vault file cannot be read again';
}

const DONE: Promise<void> = Promise.resolve();

export class VaultFollower {
  readonly #o: VaultFollowerOptions;
  #identity: string | null = null;
  #chain: Promise<void> = Promise.resolve();
  /** Refreshes queued or running: only with none may a call take the fast path. */
  #running = 0;

  constructor(o: VaultFollowerOptions) {
    this.#o = o;
  }

  /** Adopt what is on disk now (or lock). Never throws. */
  refresh(): Promise<void> {
    // The fast path (every call, twice): nothing queued, and the file is still the one last read.
    if (this.#running === 0 && (this.#o.state.locked || (this.#identity !== null && identityOf(this.#o.path) === this.#identity))) return DONE;
    this.#running++;
    const next = this.#chain.then(() => this.#once()).finally(() => this.#running--);
    this.#chain = next;
    return next;
  }

  async #once(): Promise<void> {
    const { state, path } = this.#o;
    if (state.locked) return;
    const identity = identityOf(path);
    if (identity !== null && identity === this.#identity) return;
    try {
      const r = await reopenVault(path, state.vault(), this.#o.vault);
      if (state.locked) {
        if (r.kind === 'newer') r.vault.lock();
        return;
      }
      switch (r.kind) {
        case 'unchanged':
          break;
        case 'older':
          state.lock(`the vault file went back to generation ${r.generation} (a restored copy?)`);
          return;
        case 'newer': {
          const change = state.adoptVault(r.vault);
          this.#o.onChange(change);
          break;
        }
      }
      this.#identity = identity;
    } catch (e) {
      if (!state.locked) state.lock(refusal(e));
    }
  }
}

interface VaultChangeParts {
  readonly ssh: { retire(name: string): number };
  readonly http: { retire(name: string): void } | null;
  readonly tokens: { drop(name: string): void };
  readonly anchor: { noteVaultGeneration(generation: number): void };
  readonly journalEvent: (session: string | null, type: 'vault_changed', data: Record<string, unknown>) => void;
  /** A new vault may carry the mark of an accepted record that arrived first: the catalog is judged again. */
  readonly rejudgeCatalog: () => void;
  readonly log: (line: string) => void;
}

/**
 * What a new vault generation changes in a running daemon: connections
 * authenticated with a value that changed end once their running commands
 * finish, minted tokens of those credentials are dropped, the anchor notes
 * the generation (a restored older copy is refused at the next start too),
 * and the catalog is judged again.
 */
export function onVaultChange(p: VaultChangeParts): (change: VaultChange) => void {
  return (change) => {
    let closed = 0;
    for (const name of [...change.rotated, ...change.removed]) {
      closed += p.ssh.retire(name);
      p.http?.retire(name);
      p.tokens.drop(name);
    }
    p.journalEvent(null, 'vault_changed', { ...change, ssh_connections_retired: closed });
    p.anchor.noteVaultGeneration(change.to);
    p.rejudgeCatalog();
    const list = (names: readonly string[]): string => (names.length === 0 ? '-' : names.join(','));
    // A generation that changed no credential (the daemon's own journal anchor or catalog mark, a new
    // passphrase) is not worded as a secret change.
    if (change.added.length + change.rotated.length + change.removed.length === 0) p.log(`vault generation ${change.to} in use (was ${change.from}): no credential changed`);
    else p.log(`vault generation ${change.to} adopted (was ${change.from}): added ${list(change.added)}; rotated ${list(change.rotated)}; removed ${list(change.removed)}; ${closed} SSH connections retired`);
  };
}
