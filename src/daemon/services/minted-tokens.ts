/**
 * MintedTokens: the daemon's one cache of access tokens minted from
 * lifecycle credentials (OAuth client credentials, GitHub App), one entry
 * per credential name.
 *
 * Invariants:
 * - a token is reused until `marginMs` before it expires (the margin is at
 *   most half its lifetime, so a short-lived token is still reused); expiry
 *   is measured on the monotonic clock from the moment the token was asked
 *   for, so a wall-clock step never stretches a token's life;
 * - single-flight: at most one mint per credential at a time; every call
 *   that needs the token meanwhile waits on the same promise;
 * - `learn(name, token, validUntil)` runs, and is waited for, before a minted
 *   token is stored or returned, so the redactor knows it (and the vault
 *   remembers it, for a daemon started later) before it can appear anywhere;
 *   a mint hands `learn` to whatever it makes on the way (a GitHub App JWT)
 *   for the same reason; a failed `learn` fails the mint;
 * - a permanent refusal (CREDENTIAL_REJECTED) is remembered for that
 *   credential version: later calls fail fast, nothing is sent, until the
 *   credential (or its target's auth) changes; a transient failure
 *   (CREDENTIAL_UNAVAILABLE and anything else) is not remembered: the next
 *   call tries again;
 * - a credential version never includes a refresh token (the daemon rotates
 *   it itself); `expectOwnChange` makes the vault change of that save keep
 *   the cached token;
 * - `drop(name)` (credential rotated or removed) and `clear()` (vault locked)
 *   zero the cached tokens; a mint that finishes after them is not kept;
 * - `states()` describes each entry (valid until, last refresh, last error)
 *   and never holds a value.
 */
import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock/index.js';
import { credentialDigest, type DigestibleCredential } from '../../executors/credential-digest.js';
import { isPosternError, PosternError } from '../../rules/errors.js';

interface MintedToken {
  readonly token: Uint8Array;
  /** Lifetime the issuer gave, in seconds from the request; null when it gave none. */
  readonly expiresInS: number | null;
}

/** Teaches the redactor a secret value made for a credential, with when it stops mattering (null: not known). */
type LearnSecret = (value: Uint8Array, validUntil: Date | null) => Promise<void>;

interface TokenRequest {
  readonly name: string;
  /** Changes whenever the credential's bytes, fields or its target's auth change (a keyed digest, never the value). */
  readonly version: string;
  /** Mints; `learn` must see any other secret value made on the way before that value is sent. */
  readonly mint: (learn: LearnSecret) => Promise<MintedToken>;
}

/** What `secret list` shows for a lifecycle credential. */
interface TokenState {
  readonly name: string;
  readonly valid_until: string | null;
  readonly last_refresh: string | null;
  readonly last_error: { readonly code: string; readonly message: string; readonly at: string } | null;
}

interface MintedTokensOptions {
  readonly clock: Clock;
  /** Refresh this long before expiry (default 60 s). */
  readonly marginMs?: number;
  /** How long a token whose issuer gave no lifetime is reused (default 5 min). */
  readonly defaultLifetimeMs?: number;
  /** Teach the redactor a minted value before it is used anywhere (and keep it for later daemons); a rejection fails the mint. */
  readonly learn: (name: string, token: Uint8Array, validUntil: Date | null) => void | Promise<void>;
}

interface Entry {
  version: string;
  token: Uint8Array | null;
  /** Monotonic ms after which the token is not handed out any more. */
  refreshAtMs: number;
  validUntil: Date | null;
  lastRefresh: Date | null;
  lastError: { code: string; message: string; at: Date } | null;
  rejected: PosternError | null;
  inflight: Promise<Uint8Array> | null;
  /** The daemon itself is saving this credential (a rotated refresh token): the next vault change is its own. */
  ownChange: boolean;
}

const DEFAULT_REFRESH_MARGIN_MS = 60_000;
const DEFAULT_TOKEN_LIFETIME_MS = 5 * 60_000;

export class MintedTokens {
  readonly #entries = new Map<string, Entry>();
  readonly #clock: Clock;
  readonly #marginMs: number;
  readonly #defaultLifetimeMs: number;
  readonly #learn: (name: string, token: Uint8Array, validUntil: Date | null) => void | Promise<void>;
  readonly #versionKey = randomBytes(32);

  constructor(opts: MintedTokensOptions) {
    this.#clock = opts.clock;
    this.#marginMs = opts.marginMs ?? DEFAULT_REFRESH_MARGIN_MS;
    this.#defaultLifetimeMs = opts.defaultLifetimeMs ?? DEFAULT_TOKEN_LIFETIME_MS;
    this.#learn = opts.learn;
  }

  /** The version of a credential as this cache tells versions apart: its secret bytes, its fields and its target's auth (keyed digest). */
  versionOf(credential: DigestibleCredential & { readonly meta: { readonly fields: Readonly<Record<string, string>> } }, auth: unknown): string {
    const { refresh_token: _rotating, ...secret } = credential.secret;
    return `${credentialDigest({ meta: credential.meta, secret }, this.#versionKey)}:${JSON.stringify(credential.meta.fields)}:${JSON.stringify(auth)}`;
  }

  /** A copy of the credential's current token (the caller zeroes it), minted when there is none fresh enough. */
  async token(req: TokenRequest): Promise<Uint8Array> {
    let e = this.#entries.get(req.name);
    if (e === undefined || e.version !== req.version) {
      if (e !== undefined) this.#zero(e);
      e = { version: req.version, token: null, refreshAtMs: 0, validUntil: null, lastRefresh: null, lastError: null, rejected: null, inflight: null, ownChange: false };
      this.#entries.set(req.name, e);
    }
    if (e.rejected !== null) {
      const r = e.rejected;
      throw new PosternError(r.code, r.message, { details: r.details, sideEffectStarted: false });
    }
    if (e.token !== null && this.#clock.monotonicMs() < e.refreshAtMs) return Uint8Array.from(e.token);
    e.inflight ??= this.#mint(req, e);
    return Uint8Array.from(await e.inflight);
  }

  async #mint(req: TokenRequest, e: Entry): Promise<Uint8Array> {
    const askedAt = this.#clock.monotonicMs();
    const askedWall = this.#clock.now();
    try {
      const minted = await req.mint(async (value, until) => this.#learn(req.name, value, until));
      const lifetimeMs = minted.expiresInS === null ? this.#defaultLifetimeMs : minted.expiresInS * 1000;
      const validUntil = minted.expiresInS === null ? null : new Date(askedWall.getTime() + lifetimeMs);
      try {
        await this.#learn(req.name, minted.token, validUntil);
      } catch (e) {
        minted.token.fill(0);
        throw e;
      }
      const margin = Math.min(this.#marginMs, lifetimeMs / 2);
      if (this.#entries.get(req.name) === e) {
        if (e.token !== null) e.token.fill(0);
        e.token = Uint8Array.from(minted.token);
        e.refreshAtMs = askedAt + lifetimeMs - margin;
        e.validUntil = validUntil;
        e.lastRefresh = this.#clock.now();
        e.lastError = null;
      }
      return minted.token;
    } catch (err) {
      const failure = isPosternError(err) ? err : new PosternError('CREDENTIAL_UNAVAILABLE', `credential ${req.name}: no access token could be obtained`, { sideEffectStarted: false });
      if (this.#entries.get(req.name) === e) {
        e.lastError = { code: failure.code, message: failure.message, at: this.#clock.now() };
        if (failure.code === 'CREDENTIAL_REJECTED') {
          e.rejected = failure;
          if (e.token !== null) e.token.fill(0);
          e.token = null;
        }
      }
      throw failure;
    } finally {
      e.inflight = null;
    }
  }

  /** The daemon is about to save this credential itself (a rotated refresh token): its next change keeps the token. */
  expectOwnChange(name: string): void {
    const e = this.#entries.get(name);
    if (e !== undefined) e.ownChange = true;
  }

  /** The credential changed or went away: forget its token and any refusal (unless the change is the daemon's own). */
  drop(name: string): void {
    const e = this.#entries.get(name);
    if (e === undefined) return;
    if (e.ownChange) {
      e.ownChange = false;
      return;
    }
    this.#zero(e);
    this.#entries.delete(name);
  }

  /** The vault locked: forget everything. */
  clear(): void {
    for (const e of this.#entries.values()) this.#zero(e);
    this.#entries.clear();
  }

  states(): TokenState[] {
    return [...this.#entries].map(([name, e]) => ({
      name,
      valid_until: e.token === null ? null : (e.validUntil?.toISOString() ?? null),
      last_refresh: e.lastRefresh?.toISOString() ?? null,
      last_error: e.lastError === null ? null : { code: e.lastError.code, message: e.lastError.message, at: e.lastError.at.toISOString() },
    }));
  }

  #zero(e: Entry): void {
    if (e.token !== null) e.token.fill(0);
    e.token = null;
  }
}
