/**
 * The key-derivation profile: the Argon2id cost a process gives new vaults
 * and the lowest cost it agrees to open.
 *
 * - `production` (the only profile a user can reach): libsodium's MODERATE
 *   cost (3 passes, 256 MiB, about a second here) for new key wraps, and the
 *   same as the floor when reading. A vault below it is refused.
 * - `test`: a cheap cost (1 pass, 1 MiB, about a millisecond), for the test
 *   suite's hundreds of vaults and the demo's throwaway one. It also opens
 *   production vaults; it never lowers an existing vault's cost (a passphrase
 *   change keeps the higher of the two, see changePassphrase).
 *
 * The test profile is selected only by the environment variable
 * POSTERN_TEST_KDF set to exactly TEST_KDF_SWITCH_VALUE (any other value is
 * refused, so a typo cannot half-enable it), read in one place
 * (`kdfProfileFromEnvironment`), or passed in code by the demo for the home
 * it creates itself. No CLI flag and no config file exposes it. Whatever
 * selects it, a vault below the production floor is shown as such by
 * `postern doctor`, the daemon's start line, `secret list` and the TUI's
 * status line (`belowProductionFloor`).
 */
import type { Clock } from '../clock/index.js';
import { PosternError } from '../rules/errors.js';
import { MODERATE_KDF } from './format.js';
import type { KdfRunner } from './kdf.js';
import type { KdfParams } from './types.js';
import type { VaultOptions } from './vault.js';

import { TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE } from './test-switch.js';

export { TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE };

export interface KdfProfile {
  readonly name: 'production' | 'test';
  /** The cost of a new key wrap (init, passwd). */
  readonly create: KdfParams;
  /** The lowest cost opened. */
  readonly floor: KdfParams;
  /** Where Argon2id runs: a worker (its WASM heap is freed after) or, at the cheap cost, inline. */
  readonly runner: KdfRunner;
}

export const PRODUCTION_KDF_PROFILE: KdfProfile = Object.freeze({ name: 'production', create: MODERATE_KDF, floor: MODERATE_KDF, runner: 'worker' });

/** 1 pass over 1 MiB: still Argon2id (the same code path), about a thousandth of the production cost. */
export const TEST_KDF: KdfParams = Object.freeze({ opslimit: 1, memlimit: 1024 * 1024 });
export const TEST_KDF_PROFILE: KdfProfile = Object.freeze({ name: 'test', create: TEST_KDF, floor: TEST_KDF, runner: 'inline' });

/** The profile this process's environment selects: production unless the switch holds its one value. */
export function kdfProfileFromEnvironment(env: NodeJS.ProcessEnv): KdfProfile {
  const v = env[TEST_KDF_SWITCH];
  if (v === undefined || v === '') return PRODUCTION_KDF_PROFILE;
  if (v === TEST_KDF_SWITCH_VALUE) return TEST_KDF_PROFILE;
  throw new PosternError('USAGE', `${TEST_KDF_SWITCH} must be unset (it selects a test-only key-derivation cost); it is set to something else`);
}

/** True when `kdf` costs less to guess than the production floor: a test-profile vault. */
export function belowProductionFloor(kdf: KdfParams): boolean {
  return kdf.opslimit < MODERATE_KDF.opslimit || kdf.memlimit < MODERATE_KDF.memlimit;
}

/** "Argon2id 3 passes, 256 MiB" */
export function describeKdf(kdf: KdfParams): string {
  const mib = kdf.memlimit / (1024 * 1024);
  const mem = Number.isInteger(mib) ? `${mib} MiB` : `${Math.round(kdf.memlimit / 1024)} KiB`;
  return `Argon2id ${kdf.opslimit} ${kdf.opslimit === 1 ? 'pass' : 'passes'}, ${mem}`;
}

/** The one-line warning every place that shows a below-floor vault prints. */
export function belowFloorWarning(kdf: KdfParams): string {
  return `vault key derivation ${describeKdf(kdf)} is BELOW the production floor (${describeKdf(MODERATE_KDF)}): a test-profile vault, cheap to guess; never keep real secrets in it`;
}

/** The vault options of a process running under `profile`. */
export function vaultOptionsFor(profile: KdfProfile, clock: Clock): VaultOptions {
  return { kdf: profile.create, minimumKdf: profile.floor, kdfRunner: profile.runner, clock };
}
