/**
 * Re-authentication after a new data key (`postern passwd`): every artefact
 * in the home that is MAC'd with a key derived from the vault is listed in
 * VAULT_KEYED_ARTEFACTS, verified under the old key and re-MAC'd under the
 * new one. This is what turns a passphrase change into a revocation: the
 * old passphrase still opens an old copy of the vault, but its derived keys
 * no longer authenticate anything here.
 *
 * Invariants: only what verifies under the OLD key is re-authenticated — a
 * forged or foreign entry is never laundered into an authentic one; it is
 * left as it is (still failing) and reported. Nothing is written by
 * `prepare`; `stage` adds the new file to the home change that also holds the
 * vault sealed under the new key (change-record.ts), still under the vault's
 * writer lock, so a kill leaves every artefact under the old key with the old
 * vault, or every one under the new key with the new vault.
 *
 * To register a new artefact: add an entry with its derived-key purpose, a
 * `prepare` that reads and verifies it, and a `stage`.
 */
import { acceptanceMac, verifyAcceptance, type SignedRecord } from '../contracts/index.js';
import type { DerivedKeyPurpose, RekeyKeys } from '../vault/index.js';
import type { HomeChange } from './change-record.js';
import { readAcceptance, readHistoryLines } from './catalog-store.js';
import type { HomePaths } from './paths.js';
import { openPendingLog, pendingFileText, readPendingText } from './pending-secrets.js';
import { anchorFileText, anchorIsAuthentic, anchorMismatch, readAnchor, sealAnchor } from '../journal/anchor/index.js';
import { readCheckpoints } from '../journal/checkpoint/file.js';
import { lastCheckpoint, walkTrust, type CheckpointRecord } from '../journal/checkpoint/record.js';
import { CheckpointSigner, keyFingerprint, publicKeyOf } from '../journal/checkpoint/signature.js';
import { HTTP_AUTHORIZATION } from './http-authorization.js';
import { APPROVAL_PAGE_AUTHORIZATION } from './approval-page-authorization.js';
import { AGENT_USERS } from './agent-users.js';
import { APPROVAL_DEVICES } from './approval-devices.js';
import { macVerifies, readMacdRecord, recordMac, type MacdRecordKind } from './macd-record.js';

interface PreparedArtefact {
  /** One line for the operator: what was re-authenticated, what was left. */
  readonly summary: string;
  readonly stage: (change: HomeChange) => void;
}

interface VaultKeyedArtefact {
  readonly name: string;
  readonly purpose: DerivedKeyPurpose;
  prepare(paths: HomePaths, oldKey: Uint8Array, newKey: Uint8Array): Promise<PreparedArtefact>;
}

const nothing = (): void => undefined;

const resign = (s: SignedRecord, oldKey: Uint8Array, newKey: Uint8Array): SignedRecord | undefined =>
  verifyAcceptance(oldKey, s.record, s.mac).kind === 'authentic' ? { record: s.record, mac: acceptanceMac(newKey, s.record) } : undefined;

/** catalog.accepted.json: the record the daemon adopts catalogs by. */
const acceptanceRecordFile: VaultKeyedArtefact = {
  name: 'catalog acceptance record',
  purpose: 'catalog-mac',
  async prepare(paths, oldKey, newKey) {
    const stored = await readAcceptance(paths);
    if (stored.kind !== 'stored') return { summary: `${this.name}: none`, stage: nothing };
    const next = resign(stored, oldKey, newKey);
    if (next === undefined) return { summary: `${this.name}: does NOT verify with the old key; left unauthenticated (review with \`postern catalog accept\`)`, stage: nothing };
    return { summary: `${this.name}: re-authenticated`, stage: (c) => c.write(paths.acceptedRecord, `${JSON.stringify(next, null, 2)}\n`) };
  },
};

/** catalog.history.jsonl: each authenticated line re-MAC'd; legacy and failing lines kept as they are. */
const acceptanceHistoryFile: VaultKeyedArtefact = {
  name: 'catalog acceptance history',
  purpose: 'catalog-mac',
  async prepare(paths, oldKey, newKey) {
    const lines = await readHistoryLines(paths);
    if (lines.length === 0) return { summary: `${this.name}: none`, stage: nothing };
    let resigned = 0;
    let left = 0;
    const out = lines.map(({ text, parsed: l }): string => {
      if (typeof l === 'string') {
        if (l === 'malformed') left++;
        return text;
      }
      const next = resign(l, oldKey, newKey);
      if (next === undefined) {
        left++;
        return text;
      }
      resigned++;
      return JSON.stringify(next);
    });
    const tail = left > 0 ? `; ${left} line(s) did not verify and were left as they are` : '';
    return { summary: `${this.name}: ${resigned} entr${resigned === 1 ? 'y' : 'ies'} re-authenticated${tail}`, stage: (c) => c.write(paths.catalogHistory, out.map((l) => `${l}\n`).join('')) };
  },
};

/** journal.anchor: the authenticated high-water mark of both journals (src/journal/anchor). */
const journalAnchorFile: VaultKeyedArtefact = {
  name: 'journal anchor',
  purpose: 'journal-anchor',
  prepare(paths, oldKey, newKey) {
    const stored = readAnchor(paths.anchor, oldKey);
    if (stored === undefined) return Promise.resolve({ summary: `${this.name}: none`, stage: nothing });
    if (!anchorIsAuthentic(oldKey, stored)) {
      return Promise.resolve({ summary: `${this.name}: does NOT verify with the old key; left as it is (see \`postern anchor status\`)`, stage: nothing });
    }
    // The vault zeroes its derived keys once the new data key is in place: the write keeps copies.
    const oldCopy = Uint8Array.from(oldKey);
    const newCopy = Uint8Array.from(newKey);
    return Promise.resolve({
      summary: `${this.name}: re-authenticated`,
      // Read again when staged: a running daemon (locked by then) may have advanced it since.
      stage: (c) => {
        try {
          const now = readAnchor(paths.anchor, oldCopy);
          if (now === undefined || !anchorIsAuthentic(oldCopy, now)) throw anchorMismatch({ kind: 'anchor_forged' });
          c.write(paths.anchor, anchorFileText(sealAnchor(newCopy, now.record)));
        } finally {
          oldCopy.fill(0);
          newCopy.fill(0);
        }
      },
    });
  },
};

/**
 * journal.checkpoints.jsonl: signed, not MAC'd — old lines stay verifiable
 * with the old public key. The new key pair is endorsed instead: a
 * `key_change` line signed by the old key names the new one, so a verifier
 * who pinned the old fingerprint follows to the new key. Only when the last
 * checkpoint is signed by the old key (a foreign file is not endorsed).
 */
const journalCheckpointsFile: VaultKeyedArtefact = {
  name: 'journal checkpoints',
  purpose: 'journal-checkpoint',
  prepare(paths, oldKey, newKey) {
    const walk = walkTrust(readCheckpoints(paths.checkpoints));
    const last = lastCheckpoint(walk.accepted);
    if (last === undefined) return Promise.resolve({ summary: `${this.name}: none`, stage: nothing });
    const oldSigner = new CheckpointSigner(oldKey);
    const next = publicKeyOf(newKey);
    if (last.record.public_key !== oldSigner.publicKey) {
      oldSigner.close();
      return Promise.resolve({ summary: `${this.name}: the last checkpoint is NOT signed by the old key; the new key is not endorsed`, stage: nothing });
    }
    const record: CheckpointRecord = { ...last.record, reason: 'key_change', public_key: oldSigner.publicKey, pruned_before: null, next_public_key: next };
    const stored = { record, signature: oldSigner.sign(record) };
    oldSigner.close();
    return Promise.resolve({
      summary: `${this.name}: the new key ${keyFingerprint(next)} is endorsed by the old one (note the new fingerprint)`,
      stage: (c) => c.append(paths.checkpoints, JSON.stringify(stored)),
    });
  },
};

/** A MAC'd record (macd-record.ts): the HTTP listener's and the approval page's authorizations, the paired devices. */
function macdRecordFile<R>(kind: MacdRecordKind<R>): VaultKeyedArtefact {
  return {
    name: kind.name,
    purpose: 'catalog-mac',
    async prepare(paths, oldKey, newKey) {
      const found = await readMacdRecord(kind.file(paths), kind.schema);
      if (found.kind === 'none') return { summary: `${this.name}: none`, stage: nothing };
      if (found.kind === 'malformed' || !macVerifies(oldKey, kind.domain, found.stored.record, found.stored.mac)) {
        return { summary: `${this.name}: does NOT verify with the old key; left as it is (${kind.redo})`, stage: nothing };
      }
      const record = found.stored.record;
      const next = { record, mac: recordMac(newKey, kind.domain, record) };
      return { summary: `${this.name}: re-authenticated`, stage: (c) => c.write(kind.file(paths), `${JSON.stringify(next, null, 2)}\n`) };
    },
  };
}

/** secrets.pending: received secrets not yet in the vault (pending-secrets.ts), sealed lines under a derived key. */
const pendingSecretsFile: VaultKeyedArtefact = {
  name: 'pending secrets',
  purpose: 'pending-secret',
  async prepare(paths, oldKey, newKey) {
    const text = await readPendingText(paths);
    if (text === undefined || text.trim() === '') return { summary: `${this.name}: none`, stage: nothing };
    const { entries, unopened } = openPendingLog(oldKey, text);
    if (entries.length === 0) return { summary: `${this.name}: does NOT open with the old key; left as it is`, stage: nothing };
    const sealed = pendingFileText(newKey, entries, unopened);
    for (const e of entries) {
      e.sent.fill(0);
      e.next.fill(0);
    }
    const tail = unopened.length === 0 ? '' : ` (${unopened.length} line(s) that do not open left as they are)`;
    return { summary: `${this.name}: re-encrypted${tail}`, stage: (c) => c.write(paths.pendingSecrets, sealed) };
  },
};

/**
 * Every artefact MAC'd with a vault-derived key. Keep this list complete: an
 * artefact missing here stops verifying after `postern passwd`.
 */
const VAULT_KEYED_ARTEFACTS: readonly VaultKeyedArtefact[] = [acceptanceRecordFile, acceptanceHistoryFile, journalAnchorFile, journalCheckpointsFile, macdRecordFile(HTTP_AUTHORIZATION), macdRecordFile(APPROVAL_PAGE_AUTHORIZATION), macdRecordFile(APPROVAL_DEVICES), macdRecordFile(AGENT_USERS), pendingSecretsFile];

/** Prepares every artefact under the new keys; the returned function stages them into `change` and returns the summaries. */
export async function prepareReauthentication(paths: HomePaths, keys: RekeyKeys): Promise<(change: HomeChange) => string[]> {
  const prepared: PreparedArtefact[] = [];
  for (const a of VAULT_KEYED_ARTEFACTS) prepared.push(await a.prepare(paths, keys.old(a.purpose), keys.new(a.purpose)));
  return (change) => {
    for (const p of prepared) p.stage(change);
    return prepared.map((p) => p.summary);
  };
}
