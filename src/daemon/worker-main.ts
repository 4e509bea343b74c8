/**
 * The daemon inside a worker thread (started by lifecycle/worker.ts for `postern
 * up`): the worker's composition root. It unlocks with the passphrase it was
 * handed (zeroed at once after), runs startDaemon, and talks to its parent
 * only through the control port: log lines, ready / failed / stopped, and
 * operator ports to serve ({"t":"attach"} with a transferred MessagePort).
 *
 * Invariants: the passphrase never leaves this thread and is zeroed once the
 * vault is open (or failed to open); a failure is reported as {code, message}
 * of a PosternError, never a stack; a stop request closes the daemon cleanly
 * (the same close as SIGTERM on `postern daemon`).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { systemClock } from '../clock/index.js';
import { homePaths } from '../home/paths.js';
import { isPosternError } from '../rules/errors.js';
import { startDaemon, type DaemonHandle } from './run.js';
import type { WorkerCommand, WorkerData, WorkerReport } from './lifecycle/worker-messages.js';

const data = workerData as WorkerData;
const control = data.control;
const report = (r: WorkerReport): void => control.postMessage(r);

async function main(): Promise<void> {
  const pass = new Uint8Array(data.passphrase);
  let handle: DaemonHandle;
  try {
    handle = await startDaemon(homePaths(data.home), pass, { clock: systemClock, kdf: data.kdf, log: (line) => report({ t: 'log', line }) });
  } catch (e) {
    report({ t: 'failed', error: isPosternError(e) ? { code: e.code, message: e.message } : { code: 'INTERNAL', message: 'the daemon failed to start' } });
    return;
  } finally {
    pass.fill(0);
  }
  let stopping: Promise<void> | null = null;
  control.on('message', (m: WorkerCommand) => {
    switch (m.t) {
      case 'attach':
        handle.operator.attachPort(m.port).catch((e: unknown) => report({ t: 'log', line: `operator port: ${isPosternError(e) ? e.message : 'attach failed'}` }));
        return;
      case 'stop':
        stopping ??= handle.close(m.reason).then(() => {
          report({ t: 'stopped' });
          control.close();
        });
        return;
    }
  });
  report({ t: 'ready' });
}

void main();
void parentPort; // the parent talks on `control`, a private port, not on the worker's default channel
