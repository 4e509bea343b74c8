/**
 * Worker-thread entry for Argon2id: loads libsodium in a fresh isolate, derives
 * one key, posts it back (transferred, not copied) and exits, taking the WASM
 * heap — which never shrinks and holds copies of the passphrase — with it.
 * Input arrives as workerData { passphrase, salt, opslimit, memlimit }; the
 * passphrase buffer was transferred here and is zeroed before the worker ends.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { sodium, zero } from './libsodium.js';

interface KdfJob {
  readonly passphrase: Uint8Array;
  readonly salt: Uint8Array;
  readonly opslimit: number;
  readonly memlimit: number;
}

const job = workerData as KdfJob;
try {
  const key = sodium.crypto_pwhash(32, job.passphrase, job.salt, job.opslimit, job.memlimit, sodium.crypto_pwhash_ALG_ARGON2ID13);
  parentPort?.postMessage(key, [key.buffer]);
} finally {
  zero(job.passphrase);
}
