// @subject time: minted-token expiry kept in the vault (run again a year ahead by .ci/run)
/**
 * The daemon's `learn` for minted values (src/daemon/services/remembered-store.ts):
 * the redactor learns the value, the vault remembers it until it expires
 * (so a daemon started later redacts it), then the new generation is
 * adopted; a vault that cannot be written fails the mint with
 * CREDENTIAL_UNAVAILABLE so the value is never sent, and nothing said names
 * the value. A refresh token that loses to an operator's rotate is
 * remembered as retired.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { acquireWriterLock } from '../../../src/vault/writer-lock.js';
import { rememberMinted } from '../../../src/daemon/services/remembered-store.js';
import { keepRotatedRefreshToken } from '../../../src/daemon/services/refresh-token-store.js';
import { MintedTokens } from '../../../src/daemon/services/minted-tokens.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { ManualClock } from '../../helpers/clock.js';
import { CHEAP, tempHome, utf8 } from '../vault/helpers.js';

const PASS = utf8('remembered store');
const TOKEN = 'CANARY-minted-8c1f0e2b9d';
const text = (b: Uint8Array | undefined): string => Buffer.from(b ?? new Uint8Array()).toString('utf8');

describe('remembered minted values', () => {
  it('a minted token is learnt, kept in the vault until it expires, and adopted; a busy vault fails the mint before use', async (t) => {
    const home = tempHome(t);
    const clock = new ManualClock('2026-12-01T10:00:00Z');
    const opts = { ...CHEAP, clock };
    await createVault(home.vault, PASS, opts);
    await withVaultWriter(home.vault, PASS, (v) => v.add({ name: 'api', kind: 'oauth_client_credentials', fields: { client_id: 'c' }, secret: { client_secret: utf8('CANARY-cs') } }), opts);
    const held = await openVault(home.vault, PASS, opts);
    const learnt: string[] = [];
    const logs: string[] = [];
    let refreshed = 0;
    const learn = rememberMinted({
      vaultPath: home.vault,
      vault: opts,
      state: { vault: () => held, learnMinted: (name, token) => void learnt.push(`${name}=${text(token)}`) },
      follower: { refresh: () => Promise.resolve(void refreshed++) },
      log: (l) => void logs.push(l),
    });
    const tokens = new MintedTokens({ clock, learn });
    const got = await tokens.token({ name: 'api', version: 'v1', mint: () => Promise.resolve({ token: utf8(TOKEN), expiresInS: 3600 }) });
    assert.equal(text(got), TOKEN);
    assert.deepEqual(learnt, [`api=${TOKEN}`]);
    assert.equal(refreshed, 1);
    const after = await openVault(home.vault, PASS, opts);
    const kept = after.remembered();
    assert.deepEqual(kept.map((r) => [r.meta.name, r.meta.source, r.meta.until, text(r.secret['access_token'])]), [['api', 'minted', '2026-12-01T11:00:00.000Z', TOKEN]]);
    after.lock();

    // Another writer holds the vault: the token is not handed out, and no line names it.
    const lock = await acquireWriterLock(home.vault);
    try {
      await assert.rejects(
        tokens.token({ name: 'api', version: 'v2', mint: () => Promise.resolve({ token: utf8(`${TOKEN}-2`), expiresInS: 3600 }) }),
        (e: unknown) => isPosternError(e, 'CREDENTIAL_UNAVAILABLE') && e.sideEffectStarted === false && !e.message.includes(TOKEN),
      );
    } finally {
      await lock.release();
    }
    assert.match(logs.join('\n'), /credential api: a minted token could not be kept in the vault \(VAULT_BUSY\); it was not used/);
    assert.ok(!logs.join('\n').includes(TOKEN));
    clock.advance(3600_000);
    const later = await openVault(home.vault, PASS, opts);
    assert.equal(later.remembered().length, 0, 'expired: no longer remembered');
    later.lock();
    held.lock();
  });

  it('a rotated refresh token that loses to an operator\'s rotate is remembered as retired', async (t) => {
    const home = tempHome(t);
    const opts = { ...CHEAP, clock: new ManualClock('2026-12-01T10:00:00Z') };
    await createVault(home.vault, PASS, opts);
    await withVaultWriter(home.vault, PASS, (v) => v.add({ name: 'rt', kind: 'oauth_refresh_token', fields: { client_id: 'p' }, secret: { refresh_token: utf8('CANARY-rt1') } }), opts);
    const held = await openVault(home.vault, PASS, opts);
    await withVaultWriter(home.vault, PASS, (v) => v.rotate('rt', { refresh_token: utf8('CANARY-operator') }), opts);
    assert.equal(await keepRotatedRefreshToken(home.vault, held, 'rt', utf8('CANARY-rt1'), utf8('CANARY-server-rotated'), opts), 'changed_meanwhile');
    const v = await openVault(home.vault, PASS, opts);
    assert.deepEqual(v.remembered().map((r) => text(r.secret['refresh_token'])), ['CANARY-rt1', 'CANARY-server-rotated']);
    assert.equal(text(v.get('rt')?.secret['refresh_token']), 'CANARY-operator');
    v.lock();
    held.lock();
  });
});
