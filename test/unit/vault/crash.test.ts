// Crash safety (THREATS row 13, DESIGN §2.6): a writer killed with SIGKILL at
// random moments leaves a vault that opens at the last generation it reported
// saved, or the next one; leftovers (temp file, stale lock) never break a
// later open or save and are cleaned by the next writer. A failing write
// (file-size limit: EFBIG, like a full disk) leaves the old generation intact.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { CHEAP, tempHome, utf8 } from './helpers.js';
import { stressRounds } from '../../helpers/stress.js';

const pass = utf8('kill -9 passphrase');
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// 3 rounds in `npm test`; `npm run test:stress` runs 25 (POSTERN_STRESS_ROUNDS).
const ROUNDS = stressRounds(3);

async function seed(vault: string): Promise<void> {
  await createVault(vault, pass, CHEAP);
  await withVaultWriter(vault, pass, (v) => v.add({ name: 'loop', kind: 'http_bearer', fields: {}, secret: { token: utf8('x') } }), CHEAP);
}

async function generationOf(vault: string): Promise<number> {
  const v = await openVault(vault, pass, CHEAP);
  const g = v.generation;
  v.lock();
  return g;
}

test(`SIGKILL during repeated saves, ${ROUNDS} rounds: always the last reported generation or the next`, async (t) => {
  const { dir, vault } = tempHome(t);
  await seed(vault);
  let confirmed = 2;
  for (let round = 0; round < ROUNDS; round++) {
    const child = spawn(process.execPath, ['--import', 'tsx', fixture('save-loop.ts'), vault], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const closed = new Promise<void>((r) => child.on('close', () => r()));
    const firstSave = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`round ${round}: no save within 20 s; stderr: ${err}`)), 20_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('saved ')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.on('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    await firstSave;
    await sleep(Math.random() * 30);
    child.kill('SIGKILL');
    await closed;

    let lastSaved = confirmed;
    for (const line of out.split('\n').filter((l) => l !== '')) {
      assert.match(line, /^saved \d+$/, `round ${round}: child said ${line}; stderr: ${err}`);
      const g = Number(line.slice(6));
      assert.equal(g, lastSaved + 1, `round ${round}: generations increase by one`);
      lastSaved = g;
    }
    assert.ok(lastSaved > confirmed, `round ${round}: the child saved at least once`);
    const opened = await generationOf(vault);
    assert.ok(opened === lastSaved || opened === lastSaved + 1, `round ${round}: opened ${opened}, last reported ${lastSaved}`);
    const leftovers = readdirSync(dir).filter((n) => n !== 'vault.pvlt');
    assert.ok(leftovers.filter((n) => n.startsWith('vault.pvlt.tmp-')).length <= 1, `round ${round}: ${leftovers.join(' ')}`);
    assert.ok(leftovers.length <= 3, `round ${round}: leftovers accumulate: ${leftovers.join(' ')}`);
    confirmed = opened;
  }
  await withVaultWriter(vault, pass, (v) => v.markUsed('loop'), CHEAP);
  assert.deepEqual(readdirSync(dir), ['vault.pvlt'], 'the next writer removes temp files and the stale lock');
  assert.equal(await generationOf(vault), confirmed + 1);
});

test('a write that fails midway (EFBIG under ulimit -f, as on a full disk) keeps the old generation', async (t) => {
  const { dir, vault } = tempHome(t);
  await seed(vault);
  const before = readFileSync(vault);
  const child = spawn('/bin/sh', ['-c', 'ulimit -f 64; exec "$0" --import tsx "$1" "$2"', process.execPath, fixture('grow-vault.ts'), vault], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, TSX_DISABLE_CACHE: '1' },
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  await new Promise<void>((r) => child.on('close', () => r()));
  assert.match(out.trim(), /^VAULT_IO could not write .*vault\.pvlt: EFBIG$/, `child output: ${out} ${err}`);
  assert.deepEqual(readFileSync(vault), before, 'the vault file is untouched');
  assert.deepEqual(readdirSync(dir), ['vault.pvlt'], 'no temp file and no lock left behind');
  assert.equal(await generationOf(vault), 2);
});
