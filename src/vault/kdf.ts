/**
 * Passphrase → key-encryption key with Argon2id v1.3 (libsodium crypto_pwhash).
 *
 * The default runner does the work in a short-lived worker thread, because the
 * WASM heap grows to `memlimit` and never shrinks, and it keeps the passphrase
 * bytes it was given. The 'inline' runner exists for tests that must run
 * thousands of cheap derivations. Invariants: the caller's passphrase array is
 * never modified; any copy made here is transferred or zeroed; the result is a
 * fresh 32-byte array the caller must zero; failures are VAULT_IO.
 */
import { Worker } from 'node:worker_threads';
import { PosternError } from '../rules/errors.js';
import { KEY_BYTES } from './format.js';
import { sodium } from './libsodium.js';
import type { KdfParams } from './types.js';
import { packageFile } from '../package-files.js';

export type KdfRunner = 'worker' | 'inline';

/** Derive the 32-byte key-encryption key for `passphrase` and `salt`. */
export type DeriveKek = (passphrase: Uint8Array, salt: Uint8Array, kdf: KdfParams) => Promise<Uint8Array>;

export function kekDeriver(runner: KdfRunner): DeriveKek {
  switch (runner) {
    case 'worker':
      return deriveKekInWorker;
    case 'inline':
      return deriveKekInline;
  }
}

function kdfFailure(cause: unknown): PosternError {
  return new PosternError('VAULT_IO', 'key derivation failed (Argon2id could not run; is memory short?)', { cause });
}

export function deriveKekInline(passphrase: Uint8Array, salt: Uint8Array, kdf: KdfParams): Promise<Uint8Array> {
  try {
    const alg = sodium.crypto_pwhash_ALG_ARGON2ID13;
    return Promise.resolve(sodium.crypto_pwhash(KEY_BYTES, passphrase, salt, kdf.opslimit, kdf.memlimit, alg));
  } catch (e) {
    return Promise.reject(kdfFailure(e));
  }
}

/**
 * Compiled (dist/vault/*.js): the worker is kdf-worker.js beside this file.
 * Under tsx (tests): Node 20 does not apply `--import tsx` to a worker's entry
 * module, so a tiny eval'd bootstrap registers tsx's loader first and then
 * imports kdf-worker.ts.
 */
function startWorker(workerData: object, transferList: ArrayBuffer[]): Worker {
  if (import.meta.url.endsWith('.ts')) {
    const entry = new URL('./kdf-worker.ts', import.meta.url).href;
    const tsxApi = import.meta.resolve('tsx/esm/api');
    const boot = `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
    return new Worker(boot, { eval: true, workerData, transferList, execArgv: [] });
  }
  return new Worker(packageFile('vault/kdf-worker.js'), { workerData, transferList, execArgv: [] });
}

export function deriveKekInWorker(passphrase: Uint8Array, salt: Uint8Array, kdf: KdfParams): Promise<Uint8Array> {
  // A private copy whose buffer is transferred: after this call no copy remains here.
  const passCopy = passphrase.slice();
  const job = { passphrase: passCopy, salt: salt.slice(), opslimit: kdf.opslimit, memlimit: kdf.memlimit };
  return new Promise<Uint8Array>((resolve, reject) => {
    let key: Uint8Array | undefined;
    let failure: unknown;
    let worker: Worker;
    try {
      worker = startWorker(job, [passCopy.buffer]);
    } catch (e) {
      passCopy.fill(0);
      reject(kdfFailure(e));
      return;
    }
    worker.on('message', (m: unknown) => {
      if (m instanceof Uint8Array && m.length === KEY_BYTES) key = m;
      else failure = new Error('unexpected message from the KDF worker');
    });
    worker.on('error', (e) => {
      failure = e;
    });
    worker.on('exit', (code) => {
      if (key !== undefined && failure === undefined) resolve(key);
      else {
        if (key !== undefined) sodium.memzero(key);
        reject(kdfFailure(failure ?? new Error(`KDF worker exited with code ${code}`)));
      }
    });
  });
}
