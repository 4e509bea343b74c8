/**
 * The key-derivation profile's rules (src/vault/kdf-profile.ts): only the
 * switch's one value selects the test profile, any other value is refused; a
 * cost below the production floor is named as such; a passphrase change
 * never lowers a vault's cost, whatever profile asks for it. The same on the
 * shipped CLI: test/e2e/kdf-profile.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { belowFloorWarning, belowProductionFloor, changePassphrase, createVault, describeKdf, kdfProfileFromEnvironment, MODERATE_KDF, openVault, PRODUCTION_KDF_PROFILE, TEST_KDF, TEST_KDF_PROFILE, TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE, vaultKdf, vaultOptionsFor } from '../../../src/vault/index.js';
import { systemClock } from '../../../src/clock/index.js';
import { checkVaultKdf } from '../../../src/home/host-checks.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { CHEAP, CHEAP_KDF, tempHome, utf8 } from './helpers.js';

describe('the key-derivation profile', () => {
  it('production unless the switch holds exactly its value; any other value is a usage error', () => {
    assert.equal(kdfProfileFromEnvironment({}), PRODUCTION_KDF_PROFILE);
    assert.equal(kdfProfileFromEnvironment({ [TEST_KDF_SWITCH]: '' }), PRODUCTION_KDF_PROFILE);
    assert.equal(kdfProfileFromEnvironment({ [TEST_KDF_SWITCH]: TEST_KDF_SWITCH_VALUE }), TEST_KDF_PROFILE);
    for (const v of ['1', 'true', 'yes', ` ${TEST_KDF_SWITCH_VALUE}`, TEST_KDF_SWITCH_VALUE.toUpperCase()]) {
      assert.throws(() => kdfProfileFromEnvironment({ [TEST_KDF_SWITCH]: v }), (e) => isPosternError(e, 'USAGE'), v);
    }
    assert.deepEqual(PRODUCTION_KDF_PROFILE.create, MODERATE_KDF);
    assert.deepEqual(PRODUCTION_KDF_PROFILE.floor, MODERATE_KDF);
  });

  it('names a cost below the production floor, and only such a cost', () => {
    assert.equal(belowProductionFloor(MODERATE_KDF), false);
    assert.equal(belowProductionFloor({ opslimit: 4, memlimit: MODERATE_KDF.memlimit }), false);
    assert.equal(belowProductionFloor(TEST_KDF), true);
    assert.equal(belowProductionFloor({ opslimit: 16, memlimit: 64 * 1024 * 1024 }), true, 'more passes do not make up for less memory');
    assert.equal(belowProductionFloor({ opslimit: 2, memlimit: 1024 ** 3 }), true);
    assert.equal(describeKdf(MODERATE_KDF), 'Argon2id 3 passes, 256 MiB');
    assert.equal(describeKdf(TEST_KDF), 'Argon2id 1 pass, 1 MiB');
    assert.match(belowFloorWarning(TEST_KDF), /BELOW the production floor/);
    const [low] = checkVaultKdf(TEST_KDF, PRODUCTION_KDF_PROFILE);
    assert.equal(low?.status, 'warning');
    assert.deepEqual(checkVaultKdf(MODERATE_KDF, PRODUCTION_KDF_PROFILE).map((f) => f.status), ['ok']);
    assert.deepEqual(checkVaultKdf(undefined, TEST_KDF_PROFILE).map((f) => [f.check, f.status]), [[TEST_KDF_SWITCH, 'warning']]);
  });

  it('the production profile (no switch) refuses to open a vault below its floor; the test profile opens it', async (t) => {
    const { vault } = tempHome(t);
    await createVault(vault, utf8('cheap passphrase'), vaultOptionsFor(TEST_KDF_PROFILE, systemClock));
    for (const opts of [vaultOptionsFor(kdfProfileFromEnvironment({}), systemClock), vaultOptionsFor(PRODUCTION_KDF_PROFILE, systemClock), {}]) {
      await assert.rejects(openVault(vault, utf8('cheap passphrase'), opts), (e) => isPosternError(e, 'VAULT_CORRUPT') && /below the production floor/.test(e.message), 'below the floor: refused before any key is derived');
    }
    assert.deepEqual(vaultOptionsFor(PRODUCTION_KDF_PROFILE, systemClock).minimumKdf, MODERATE_KDF);
    const v = await openVault(vault, utf8('cheap passphrase'), vaultOptionsFor(kdfProfileFromEnvironment({ [TEST_KDF_SWITCH]: TEST_KDF_SWITCH_VALUE }), systemClock));
    assert.deepEqual(v.kdf, TEST_KDF);
    v.lock();
  });

  it("a passphrase change keeps the higher of the vault's cost and the one asked for", async (t) => {
    const { vault } = tempHome(t);
    const stronger = { opslimit: 2, memlimit: 16 * 1024 };
    await createVault(vault, utf8('first passphrase'), { ...CHEAP, kdf: stronger });
    await changePassphrase(vault, utf8('first passphrase'), utf8('second passphrase'), { ...CHEAP, kdf: CHEAP_KDF });
    assert.deepEqual(await vaultKdf(vault), stronger, 'not lowered to the cheaper cost asked for');
    const v = await openVault(vault, utf8('second passphrase'), CHEAP);
    assert.deepEqual(v.kdf, stronger);
    v.lock();
  });
});
