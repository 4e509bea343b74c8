/**
 * Benchmark: vault unlock time at the default KDF. A vault created with the
 * default Argon2id parameters (MODERATE_KDF, what `postern init` uses) is
 * opened a few times with `openVault`, as the daemon does at start; the
 * median is reported. This is a security floor, not a cost to minimize: the
 * passphrase derivation is made slow on purpose, so an offline guess costs as
 * much. Nothing else is compared with it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/clock/index.js';
import { createVault, MODERATE_KDF, openVault } from '../../src/vault/index.js';
import { report } from './report.js';

const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 3);
const dir = mkdtempSync(join(tmpdir(), 'postern-bench-vault-'));
const path = join(dir, 'vault.pvlt');
const passphrase = (): Uint8Array => Buffer.from('bench-vault-passphrase');

await createVault(path, passphrase());
const times: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const t0 = systemClock.monotonicMs();
  const v = await openVault(path, passphrase());
  times.push(systemClock.monotonicMs() - t0);
  v.lock();
}
rmSync(dir, { recursive: true, force: true });

const median = [...times].sort((a, b) => a - b)[Math.floor(times.length / 2)]!;
const kdf = `Argon2id opslimit ${MODERATE_KDF.opslimit}, memlimit ${MODERATE_KDF.memlimit / (1024 * 1024)} MiB`;
console.log(`vault unlock (openVault) at the default KDF (${kdf}), ${ROUNDS} runs:`);
console.log(`  median ${median.toFixed(0)} ms (min ${Math.min(...times).toFixed(0)}, max ${Math.max(...times).toFixed(0)}) — a security floor, not a target`);
report('vault-unlock', `vault unlock at the default KDF (${kdf}), ${ROUNDS} runs`, [
  { name: 'openVault, default KDF', value: median, unit: 'ms', target: 'a security floor, not a target' },
]);
