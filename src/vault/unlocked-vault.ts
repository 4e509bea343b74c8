/**
 * An opened vault in memory: credentials with their secret bytes, the data
 * key, and the header's key wrap (so saving never re-runs the KDF).
 *
 * Invariants: secret parts live only as Uint8Array; `get` and `secretValues`
 * hand out the vault's own arrays (do not modify them) and `lock()` zeroes
 * them, the data key and every derived key handed out, after which every
 * method throws VAULT_LOCKED. Inputs are copied, so callers zero their own
 * copies. Mutations only mark the vault dirty; writing is done by
 * withVaultWriter (vault.ts), which reaches the state through `vaultState`.
 * A value a rotate or rm replaces is not dropped but remembered (with every
 * minted token the daemon asks to `remember`), so a redactor built from a
 * vault opened later still recognizes it; every mutation first prunes the
 * remembered values whose time is over (`until`, or `since` + the retention).
 */
import { PosternError } from '../rules/errors.js';
import { assertValidFields, assertValidKind, assertValidName, assertValidSecret, rememberedPartsProblem } from './credentials.js';
import type { KeyWrap } from './format.js';
import { sodium, zero } from './libsodium.js';
import type { CatalogMark, StoredCredential, StoredRemembered, VaultContents } from './payload.js';
import { MAX_REMEMBERED, zeroCredentials } from './payload.js';
import { MAX_RETENTION_DAYS, type Credential, type CredentialKind, type CredentialMeta, type DerivedKeyPurpose, type JournalGapMark, type JournalMark, type KdfParams, type RememberedSource, type RememberedValue } from './types.js';

/** @internal The mutable state behind an UnlockedVault. */
interface VaultState {
  dataKey: Uint8Array;
  keyWrap: KeyWrap;
  readonly contents: VaultContents;
  dirty: boolean;
  locked: boolean;
  readonly derivedKeys: Map<DerivedKeyPurpose, Uint8Array>;
  readonly now: () => Date;
}

/** Subkey derivation: libsodium crypto_kdf_derive_from_key(32, id, context, dataKey). */
const DERIVED_KEY_CONTEXT = 'pstnvlt1';
function derivedKeyId(purpose: DerivedKeyPurpose): number {
  switch (purpose) {
    case 'catalog-mac':
      return 1;
    case 'operator-auth':
      return 2;
    case 'journal-anchor':
      return 3;
    case 'secret-exposure':
      return 4;
    case 'journal-checkpoint':
      return 5;
    case 'pending-secret':
      return 6;
  }
}

/** @internal A derived key straight from a data key (changePassphrase needs the new key's before the vault holds it). */
export function deriveFromDataKey(dataKey: Uint8Array, purpose: DerivedKeyPurpose): Uint8Array {
  return sodium.crypto_kdf_derive_from_key(32, derivedKeyId(purpose), DERIVED_KEY_CONTEXT, dataKey);
}

const states = new WeakMap<UnlockedVault, VaultState>();

function lockedError(): PosternError {
  return new PosternError('VAULT_LOCKED', 'the vault is locked');
}

/** @internal For vault.ts: the live state, or VAULT_LOCKED. */
export function vaultState(v: UnlockedVault): VaultState {
  const s = states.get(v);
  if (s === undefined || s.locked) throw lockedError();
  return s;
}

/** @internal Were there changes not yet saved? Readable after lock(), unlike the rest of the state. */
export function vaultIsDirty(v: UnlockedVault): boolean {
  return states.get(v)?.dirty ?? false;
}

function quoted(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}

function notFound(name: string): PosternError {
  return new PosternError('SECRET_NOT_FOUND', `no secret named ${quoted(name)}`, { details: { name: name.slice(0, 64) } });
}

function copyMeta(c: StoredCredential): CredentialMeta {
  return Object.freeze({ ...c.meta, fields: Object.freeze({ ...c.meta.fields }) });
}

function copySecret(secret: Readonly<Record<string, Uint8Array>>): Record<string, Uint8Array> {
  const out: Record<string, Uint8Array> = {};
  // Uint8Array.from, not slice(): a Buffer's slice() is a view, and callers zero their inputs.
  for (const [part, bytes] of Object.entries(secret)) out[part] = Uint8Array.from(bytes);
  return out;
}

export interface NewCredential {
  name: string;
  kind: CredentialKind;
  fields: Record<string, string>;
  secret: Record<string, Uint8Array>;
}

interface NewRemembered {
  name: string;
  kind: CredentialKind;
  fields: Record<string, string>;
  secret: Record<string, Uint8Array>;
  source: RememberedSource;
  /** When it stops mattering; null: the retention decides. */
  until: Date | null;
}

const DAY_MS = 86_400_000;

/** When a remembered value stops mattering (ms since the epoch). */
function endOf(r: StoredRemembered, retentionDays: number): number {
  return r.meta.until !== null ? Date.parse(r.meta.until) : Date.parse(r.meta.since) + retentionDays * DAY_MS;
}

/** Drops (and zeroes) remembered values whose time is over, and the oldest beyond MAX_REMEMBERED. */
function pruneRemembered(s: VaultState): void {
  const now = s.now().getTime();
  const keep: StoredRemembered[] = [];
  const drop: StoredRemembered[] = [];
  for (const r of s.contents.remembered) (endOf(r, s.contents.retentionDays) > now ? keep : drop).push(r);
  while (keep.length > MAX_REMEMBERED) drop.push(keep.shift() as StoredRemembered);
  if (drop.length === 0) return;
  zeroCredentials(drop);
  s.contents.remembered = keep;
  s.dirty = true;
}

/** The value `c` held until now, remembered as retired (its own arrays move there). */
function retire(s: VaultState, c: StoredCredential): void {
  const { name, kind, fields } = c.meta;
  s.contents.remembered.push({ meta: { name, kind, source: 'retired', since: s.now().toISOString(), until: null, fields }, secret: c.secret });
}

export class UnlockedVault {
  /** @internal Obtain vaults from openVault or withVaultWriter. */
  constructor(state: VaultState) {
    states.set(this, state);
  }

  get generation(): number {
    return states.get(this)?.contents.generation ?? 0;
  }

  get locked(): boolean {
    return states.get(this)?.locked ?? true;
  }

  /** The Argon2id cost of the passphrase's key wrap (public: it is in the file's header). */
  get kdf(): KdfParams {
    const k = states.get(this)?.keyWrap.kdf;
    return { opslimit: k?.opslimit ?? 0, memlimit: k?.memlimit ?? 0 };
  }

  /** Metadata of every credential, sorted by name. */
  list(): CredentialMeta[] {
    const { contents } = vaultState(this);
    return [...contents.credentials.keys()].sort().map((name) => copyMeta(contents.credentials.get(name) as StoredCredential));
  }

  /** The credential with its secret parts (the vault's own arrays, zeroed by lock()). */
  get(name: string): Credential | undefined {
    const c = vaultState(this).contents.credentials.get(name);
    if (c === undefined) return undefined;
    return Object.freeze({ meta: copyMeta(c), secret: Object.freeze({ ...c.secret }) });
  }

  add(input: NewCredential): void {
    const s = vaultState(this);
    const { name, kind, fields, secret } = input;
    assertValidName(name);
    assertValidKind(kind);
    assertValidFields(kind, fields);
    assertValidSecret(kind, secret);
    if (s.contents.credentials.has(name)) {
      throw new PosternError('SECRET_EXISTS', `a secret named ${quoted(name)} already exists (use rotate to replace it)`, {
        details: { name },
      });
    }
    pruneRemembered(s);
    s.contents.credentials.set(name, {
      meta: { name, kind, created_at: s.now().toISOString(), rotated_at: null, last_used_at: null, fields: Object.freeze({ ...fields }) },
      secret: copySecret(secret),
    });
    s.dirty = true;
  }

  /** Replace the secret parts (and the fields, when given); the old parts are zeroed. */
  rotate(name: string, secret: Record<string, Uint8Array>, fields?: Record<string, string>): void {
    const s = vaultState(this);
    const c = s.contents.credentials.get(name);
    if (c === undefined) throw notFound(name);
    assertValidSecret(c.meta.kind, secret);
    if (fields !== undefined) assertValidFields(c.meta.kind, fields);
    pruneRemembered(s);
    retire(s, c);
    c.secret = copySecret(secret);
    if (fields !== undefined) c.meta.fields = Object.freeze({ ...fields });
    c.meta.rotated_at = s.now().toISOString();
    s.dirty = true;
  }

  remove(name: string): void {
    const s = vaultState(this);
    const c = s.contents.credentials.get(name);
    if (c === undefined) throw notFound(name);
    pruneRemembered(s);
    s.contents.credentials.delete(name);
    retire(s, c);
    s.dirty = true;
  }

  /**
   * Remembers a value the redactor must still recognize after a restart (a
   * token minted from credential `name`, or a value retired outside a
   * rotate) until `until`, or for the retention when null. Copies the input.
   */
  remember(input: NewRemembered): void {
    const s = vaultState(this);
    const { name, kind, fields, secret, source, until } = input;
    assertValidName(name);
    assertValidKind(kind);
    assertValidFields(kind, fields);
    const problem = rememberedPartsProblem(kind, Object.keys(secret));
    if (problem !== null) throw new PosternError('INPUT_INVALID', problem, { details: { reason: problem } });
    for (const part of Object.values(secret)) if (!(part instanceof Uint8Array)) throw new PosternError('INPUT_INVALID', 'secret parts must be byte arrays');
    pruneRemembered(s);
    const since = s.now();
    if (until !== null && until.getTime() <= since.getTime()) return;
    s.contents.remembered.push({ meta: { name, kind, source, since: since.toISOString(), until: until?.toISOString() ?? null, fields: Object.freeze({ ...fields }) }, secret: copySecret(secret) });
    pruneRemembered(s);
    s.dirty = true;
  }

  /** The remembered values that still matter now, oldest first (the vault's own arrays, zeroed by lock()). */
  remembered(): RememberedValue[] {
    const s = vaultState(this);
    const now = s.now().getTime();
    return s.contents.remembered
      .filter((r) => endOf(r, s.contents.retentionDays) > now)
      .map((r) => Object.freeze({ meta: Object.freeze({ ...r.meta }), secret: Object.freeze({ ...r.secret }) }));
  }

  /** Days a retired value stays remembered (FORMAT.md §4, `retention_days`). */
  get retentionDays(): number {
    return vaultState(this).contents.retentionDays;
  }

  /** Sets the retention of retired values; values already past it are pruned. */
  setRetentionDays(days: number): void {
    const s = vaultState(this);
    if (!Number.isInteger(days) || days < 0 || days > MAX_RETENTION_DAYS) {
      throw new PosternError('INPUT_INVALID', `the retention is a whole number of days from 0 to ${MAX_RETENTION_DAYS}`, { details: { reason: 'retention out of range' } });
    }
    if (days === s.contents.retentionDays) return;
    s.contents.retentionDays = days;
    s.dirty = true;
    pruneRemembered(s);
  }

  markUsed(name: string): void {
    const s = vaultState(this);
    const c = s.contents.credentials.get(name);
    if (c === undefined) throw notFound(name);
    pruneRemembered(s);
    c.meta.last_used_at = s.now().toISOString();
    s.dirty = true;
  }

  /**
   * The last catalog acceptance this vault recorded (sequence and digest), or
   * null before the first. Readable while unlocked.
   */
  get acceptedCatalog(): CatalogMark | null {
    const m = vaultState(this).contents.acceptedCatalog;
    return m === null ? null : { ...m };
  }

  /** Records a catalog acceptance; the sequence must go up by exactly one. Saved by withVaultWriter. */
  recordAcceptedCatalog(mark: CatalogMark): void {
    const s = vaultState(this);
    const want = (s.contents.acceptedCatalog?.sequence ?? 0) + 1;
    if (mark.sequence !== want || !/^[0-9a-f]{64}$/.test(mark.digest)) {
      throw new PosternError('INPUT_INVALID', `a catalog acceptance must be #${want} with a SHA-256 digest`);
    }
    pruneRemembered(s);
    s.contents.acceptedCatalog = { sequence: mark.sequence, digest: mark.digest };
    s.dirty = true;
  }

  /** The journal this vault last recorded (FORMAT.md §4, `journal`), or null. Readable while unlocked. */
  get journal(): JournalMark | null {
    const j = vaultState(this).contents.journal;
    if (j === null) return null;
    const cp = j.checkpoints ?? null;
    return { id: j.id, activity: { ...j.activity }, sessions: { ...j.sessions }, ...(cp === null ? {} : { checkpoints: { ...cp } }) };
  }

  /**
   * Records the journal the home keeps. Another journal (a new home's, or one
   * the operator started) is a change to save; the same journal's later heads
   * are not: they ride along with the next save, and never move back.
   */
  recordJournal(mark: JournalMark): void {
    const s = vaultState(this);
    const held = s.contents.journal;
    // The checkpoint file is the home's, not the journal's: a mark without it keeps the one held (the file only grows).
    const checkpoints = mark.checkpoints ?? held?.checkpoints ?? null;
    const copy = { id: mark.id, activity: { ...mark.activity }, sessions: { ...mark.sessions }, ...(checkpoints === null ? {} : { checkpoints: { ...checkpoints } }) };
    if (held === null || held.id !== mark.id) {
      s.contents.journal = copy;
      s.dirty = true;
    } else if (mark.activity.seq >= held.activity.seq && mark.sessions.seq >= held.sessions.seq) {
      // The first record of the checkpoints is a change to save: until then a deleted checkpoint file reads as none yet.
      if ((held.checkpoints ?? null) === null && checkpoints !== null) s.dirty = true;
      s.contents.journal = copy;
    }
  }

  /**
   * Records the journal an operator command put in place (`anchor
   * new-journal`, `anchor restore-journal`): a change to save even when it is
   * the same journal with heads behind the record — the operator restored an
   * older copy on purpose, and the anchor and checkpoints change with it.
   */
  replaceJournalRecord(mark: JournalMark): void {
    const s = vaultState(this);
    // The checkpoints are recorded afresh by the next save (the daemon's start makes one).
    s.contents.journal = { id: mark.id, activity: { ...mark.activity }, sessions: { ...mark.sessions } };
    s.dirty = true;
  }

  /** What restores decided about keys lost with a journal (FORMAT.md §4, `journal_gap`): null when nothing is held, undefined when never recorded. */
  get journalGap(): JournalGapMark | null | undefined {
    const g = vaultState(this).contents.journalGap;
    return g === undefined || g === null ? g : { held: g.held.map((k) => ({ ...k })), released: g.released.map((k) => ({ ...k })), unread: g.unread };
  }

  /** Records the gap state after an operator's restore, release or close (journal/gap.ts); a change to save when it differs. */
  recordJournalGap(mark: JournalGapMark | null): void {
    const s = vaultState(this);
    const copy = mark === null ? null : { held: mark.held.map((k) => ({ tool: k.tool, key: k.key })), released: mark.released.map((k) => ({ tool: k.tool, key: k.key })), unread: mark.unread };
    if (JSON.stringify(copy) === JSON.stringify(s.contents.journalGap)) return;
    s.contents.journalGap = copy;
    s.dirty = true;
  }

  /**
   * The 32-byte key for `purpose`, derived from the data key. changePassphrase
   * replaces the data key, so every derived key changes with the passphrase. Returns the vault's own array (do not modify it);
   * lock() zeroes it.
   */
  deriveKey(purpose: DerivedKeyPurpose): Uint8Array {
    const s = vaultState(this);
    let key = s.derivedKeys.get(purpose);
    if (key === undefined) {
      key = deriveFromDataKey(s.dataKey, purpose);
      s.derivedKeys.set(purpose, key);
    }
    return key;
  }

  /** Every non-empty secret part (the vault's own arrays), for redaction scanners. */
  secretValues(): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const c of vaultState(this).contents.credentials.values()) {
      for (const bytes of Object.values(c.secret)) if (bytes.length > 0) out.push(bytes);
    }
    return out;
  }

  /** Zero the data key, every secret part and every derived key. Idempotent. */
  lock(): void {
    const s = states.get(this);
    if (s === undefined || s.locked) return;
    s.locked = true;
    zeroCredentials(s.contents.credentials.values());
    s.contents.credentials.clear();
    zeroCredentials(s.contents.remembered);
    s.contents.remembered = [];
    zero(s.dataKey, ...s.derivedKeys.values());
    s.derivedKeys.clear();
  }
}
