/**
 * Runs the daemon core in a worker thread (`postern up`): the UI renders in
 * the main thread and never stalls calls, and talks to the daemon only over
 * private in-process operator ports — never a path on disk.
 *
 *   const d = await startDaemonWorker(home, passphrase, { log });
 *   const client = createOperatorClient(await connectPortTransport(d.attach(), { role: 'operator' }));
 *   …
 *   await d.stop('operator quit');   // locks the vault and stops the daemon cleanly
 *
 * Invariants: the passphrase is copied into a buffer that is transferred to
 * the worker (the caller zeroes its own); start-up failures reject with the
 * daemon's PosternError code and message; `exited` settles once, with null
 * after a requested stop and an error if the worker ended otherwise.
 */
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { ErrorCodes, PosternError, type ErrorCode } from '../../rules/errors.js';
import type { KdfProfile } from '../../vault/index.js';
import type { WorkerCommand, WorkerData, WorkerReport } from './worker-messages.js';
import { packageFile } from '../../package-files.js';

interface DaemonWorker {
  /** A fresh private operator port to the daemon; hand it to connectPortTransport. */
  attach(): MessagePort;
  /** Stops the daemon cleanly (vault locked, journals closed) and ends the worker. */
  stop(reason: string): Promise<void>;
  readonly exited: Promise<PosternError | null>;
}

interface DaemonWorkerOptions {
  /** The daemon's log lines (never secret). */
  readonly log: (line: string) => void;
  /** The key-derivation profile the daemon opens the vault under. */
  readonly kdf: KdfProfile;
}

function workerFor(data: WorkerData, transfer: (ArrayBuffer | MessagePort)[]): Worker {
  if (import.meta.url.endsWith('.ts')) {
    // Running from source (tests): register tsx in the worker first, as src/vault/kdf.ts does.
    const entry = new URL('../worker-main.ts', import.meta.url).href;
    const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); });`;
    return new Worker(boot, { eval: true, workerData: data, transferList: transfer, execArgv: [] });
  }
  return new Worker(packageFile('daemon/worker-main.js'), { workerData: data, transferList: transfer, execArgv: [] });
}

const known = (code: string): ErrorCode => (Object.prototype.hasOwnProperty.call(ErrorCodes, code) ? (code as ErrorCode) : 'INTERNAL');

export function startDaemonWorker(home: string, passphrase: Uint8Array, opts: DaemonWorkerOptions): Promise<DaemonWorker> {
  // A copy of its own (a Buffer's slice would share, and transfer, its whole pool).
  const pass = Uint8Array.from(passphrase);
  const { port1: control, port2: theirs } = new MessageChannel();
  const worker = workerFor({ home, passphrase: pass.buffer, control: theirs, kdf: opts.kdf }, [pass.buffer, theirs]);
  let stopped: (() => void) | null = null;
  let requested = false;
  let settleExit: (e: PosternError | null) => void = () => undefined;
  const exited = new Promise<PosternError | null>((r) => (settleExit = r));
  const send = (c: WorkerCommand, transfer: MessagePort[] = []): void => control.postMessage(c, transfer);

  return new Promise<DaemonWorker>((resolve, reject) => {
    let ready = false;
    control.on('message', (r: WorkerReport) => {
      switch (r.t) {
        case 'log':
          opts.log(r.line);
          return;
        case 'ready':
          ready = true;
          resolve({
            attach() {
              const { port1, port2 } = new MessageChannel();
              send({ t: 'attach', port: port1 }, [port1]);
              return port2;
            },
            stop(reason) {
              requested = true;
              const done = new Promise<void>((res) => (stopped = res));
              send({ t: 'stop', reason });
              return done;
            },
            exited,
          });
          return;
        case 'failed':
          reject(new PosternError(known(r.error.code), r.error.message));
          return;
        case 'stopped':
          stopped?.();
          return;
      }
    });
    worker.once('error', () => {
      const e = new PosternError('INTERNAL', 'the daemon thread failed unexpectedly');
      if (!ready) reject(e);
      settleExit(e);
    });
    worker.once('exit', (code) => {
      control.close();
      stopped?.();
      if (!ready) reject(new PosternError('INTERNAL', `the daemon thread ended before it was ready (exit ${code})`));
      settleExit(requested ? null : new PosternError('DAEMON_UNAVAILABLE', `the daemon thread ended (exit ${code})`));
    });
  });
}
