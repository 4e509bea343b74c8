// DaemonState.adoptVault: the daemon swaps in a newer vault generation while
// calls run. What changed is reported by name; the redactor covers the new
// values and every retired one; a call's own credential copy and an earlier
// redactor are not disturbed by the swap; locking says why.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { sha256Hex } from '../../../src/contracts/index.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { DaemonState, snapshotOf } from '../../../src/daemon/services/state.js';
import { createVault, openVault, reopenVault, withVaultWriter } from '../../../src/vault/index.js';
import { keepMintedValue } from '../../../src/daemon/services/remembered-store.js';
import { CHEAP, tempHome, utf8 } from '../vault/helpers.js';

const pass = utf8('state-passphrase');
const OLD = 'CANARY-old-5c1d0e9a7b3f';
const NEW = 'CANARY-new-8e2a4c6d1f0b';
const GONE = 'CANARY-gone-3a9f7e1c5d2b';
const text = (b: Uint8Array | undefined): string => Buffer.from(b ?? new Uint8Array()).toString('utf8');
const empty = snapshotOf({ fileName: 'x', targets: new Map(), tools: new Map(), preapprovals: new Map() }, sha256Hex(''), null);

test('adoptVault: names what changed, redacts old and new values, leaves calls in flight intact', async (t) => {
  const { vault } = tempHome(t);
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => {
    v.add({ name: 'api', kind: 'http_bearer', fields: {}, secret: { token: utf8(OLD) } });
    v.add({ name: 'gone', kind: 'http_bearer', fields: {}, secret: { token: utf8(GONE) } });
    v.add({ name: 'same', kind: 'http_bearer', fields: {}, secret: { token: utf8('CANARY-same-value-1234') } });
  }, CHEAP);
  const state = new DaemonState(await openVault(vault, pass, CHEAP), empty);
  const inFlight = state.takeCredential('api');
  const earlier = state.redactor();

  await withVaultWriter(vault, pass, (v) => {
    v.rotate('api', { token: utf8(NEW) });
    v.remove('gone');
    v.add({ name: 'fresh', kind: 'http_bearer', fields: {}, secret: { token: utf8('CANARY-fresh-value-99') } });
  }, CHEAP);
  const r = await reopenVault(vault, state.vault(), CHEAP);
  assert.equal(r.kind, 'newer');
  if (r.kind !== 'newer') return;
  const change = state.adoptVault(r.vault);
  assert.deepEqual(change, { from: 2, to: 3, added: ['fresh'], rotated: ['api'], removed: ['gone'] });

  assert.equal(text(state.vault().get('api')?.secret['token']), NEW);
  assert.equal(state.vault().get('gone'), undefined);
  assert.equal(text(inFlight?.secret['token']), OLD, 'the copy a call took survives the swap');
  const now = state.redactor();
  for (const value of [OLD, NEW, GONE, `Bearer ${OLD}`, Buffer.from(OLD).toString('base64')]) {
    assert.ok(!now.redactText(`echo ${value} echo`).includes(value), `redacted: ${value}`);
  }
  assert.equal(now.redactText(`x ${OLD} y`), 'x [REDACTED:api] y');
  assert.ok(!earlier.redactText(OLD).includes(OLD), 'a redactor taken before the swap still works');
  assert.ok(now.findSecret({ q: GONE }), 'a retired value in arguments is still refused');

  state.lock('test reason');
  try {
    state.redactor();
    assert.fail('locked');
  } catch (e) {
    assert.ok(isPosternError(e, 'VAULT_LOCKED'));
    assert.match(e.message, /\(test reason\): restart the daemon/);
  }
});

test('after a restart, the redactor covers a minted value the vault remembers (not only the credentials)', async (t) => {
  const { vault } = tempHome(t);
  const MINTED = 'CANARY-minted-before-restart-7d2e9c';
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => v.add({ name: 'api', kind: 'oauth_client_credentials', fields: { client_id: 'c', token_url: 'https://auth.example/token' }, secret: { client_secret: utf8('CANARY-client-secret-41') } }), CHEAP);
  // The daemon before the restart kept the token it minted (remembered-store.ts).
  const before = await openVault(vault, pass, CHEAP);
  await keepMintedValue(vault, before, 'api', utf8(MINTED), null, CHEAP);
  before.lock();
  // A new daemon: a fresh unlock and a fresh state, which never learnt the token itself.
  const state = new DaemonState(await openVault(vault, pass, CHEAP), empty);
  const r = state.redactor();
  for (const value of [MINTED, `Bearer ${MINTED}`, Buffer.from(MINTED).toString('base64')]) {
    assert.ok(!r.redactText(`echo ${value} echo`).includes(value), `redacted after the restart: ${value}`);
  }
  assert.equal(r.redactText(`x ${MINTED} y`), 'x [REDACTED:api] y');
  assert.ok(r.findSecret({ q: MINTED }), 'the remembered value in arguments is refused too');
  state.lock('test over');
});

test('tokens minted one after another: each is redacted, and so are the credentials and the remembered values, with their names', async (t) => {
  const { vault } = tempHome(t);
  const KEPT = 'CANARY-kept-before-unlock-5e1a';
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => {
    v.add({ name: 'api', kind: 'oauth_client_credentials', fields: { client_id: 'c', token_url: 'https://auth.example/token' }, secret: { client_secret: utf8('CANARY-client-secret-77') } });
    v.add({ name: 'other', kind: 'http_bearer', fields: {}, secret: { token: utf8(OLD) } });
  }, CHEAP);
  const held = await openVault(vault, pass, CHEAP);
  await keepMintedValue(vault, held, 'api', utf8(KEPT), null, CHEAP);
  held.lock();
  const state = new DaemonState(await openVault(vault, pass, CHEAP), empty);
  const minted = Array.from({ length: 5 }, (_, i) => `CANARY-minted-${i}-0c9b7a5e3d1f`);
  for (const token of minted) {
    state.learnMinted('api', utf8(token));
    const r = state.redactor();
    assert.equal(r.redactText(`a ${token} b`), 'a [REDACTED:api] b');
    assert.equal(r.redactText(`a ${OLD} b`), 'a [REDACTED:other] b', 'the credentials stay covered');
    assert.equal(r.redactText(`a ${KEPT} b`), 'a [REDACTED:api] b', 'the remembered value stays covered');
    assert.equal(r.redactText('a CANARY-client-secret-77 b'), 'a [REDACTED:api] b');
  }
  const last = state.redactor();
  for (const token of minted) assert.ok(last.findSecret({ q: `Bearer ${token}` }), `still covered: ${token}`);
  state.lock('test over');
});
