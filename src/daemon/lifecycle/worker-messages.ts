/**
 * The messages between `postern up` and its daemon worker (./worker.ts,
 * ../worker-main.ts), on a private control port. Data only; no secrets except
 * the passphrase in WorkerData, which is transferred (not copied) to the
 * worker and zeroed there.
 */
import type { MessagePort } from 'node:worker_threads';
import type { KdfProfile } from '../../vault/index.js';

export interface WorkerData {
  readonly home: string;
  /** The passphrase's bytes, transferred to the worker. */
  readonly passphrase: ArrayBuffer;
  readonly control: MessagePort;
  /** The parent's key-derivation profile (a worker does not read the environment for it). */
  readonly kdf: KdfProfile;
}

export type WorkerCommand =
  /** Serve this port as an in-process operator channel (connectPortTransport on the other end). */
  | { readonly t: 'attach'; readonly port: MessagePort }
  | { readonly t: 'stop'; readonly reason: string };

export type WorkerReport =
  | { readonly t: 'log'; readonly line: string }
  | { readonly t: 'ready' }
  | { readonly t: 'failed'; readonly error: { readonly code: string; readonly message: string } }
  | { readonly t: 'stopped' };
