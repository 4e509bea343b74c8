/**
 * Shared pieces for the journal tests: a private temporary directory per test,
 * complete call records (every field set, so round trips prove every field),
 * a raw SQLite handle for tampering, and a runner for child processes that
 * use the journal the way a separate daemon process would.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { CallRecord, TargetDetails } from '../../../src/journal/index.js';
import type { Clock } from '../../../src/clock/index.js';
import type { AnchorContext } from '../../../src/journal/anchor/index.js';
import { ManualClock, wallClock } from '../../helpers/clock.js';

export const CHILD = resolve(import.meta.dirname, 'fixtures/journal-child.ts');

export function tempJournalDir(): { dir: string; cleanup: () => void } {
  const root = mkdtempSync(join(tmpdir(), 'postern-journal-'));
  return { dir: join(root, 'journal'), cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** A private home for anchored journals: the journal directory, its anchor and checkpoint file, a manual clock and fresh keys. */
export interface AnchoredHome {
  readonly root: string;
  readonly dir: string;
  readonly cpPath: string;
  readonly clock: ManualClock;
  readonly seed: Uint8Array;
  ctx(over?: Partial<AnchorContext>): AnchorContext;
  cleanup(): void;
}

export function anchoredHome(catalogDigest: string): AnchoredHome {
  const root = mkdtempSync(join(tmpdir(), 'postern-cp-'));
  const dir = join(root, 'journal');
  const cpPath = join(root, 'journal.checkpoints.jsonl');
  const clock = new ManualClock('2031-05-01T00:00:00.000Z');
  const key = randomBytes(32);
  const seed = randomBytes(32);
  return {
    root,
    dir,
    cpPath,
    clock,
    seed,
    ctx: (over = {}) => ({ journalDir: dir, anchorPath: join(root, 'journal.anchor'), key, vaultGeneration: 1, catalogDigest, clock, log: () => undefined, checkpoints: { path: cpPath, seed }, ...over }),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

let n = 0;
/** A call record with every field populated; override what a test needs. */
export function callRecord(over: Partial<CallRecord> = {}): CallRecord {
  n += 1;
  return {
    call_id: `call-${n}-${Math.random().toString(36).slice(2, 8)}`,
    session_id: 'sess-1',
    run_id: 'run-7',
    agent_release: 'agent-2026-01.1',
    toolset_planned: 'cafe0123abcd',
    tool: 'deploy_preview',
    revision_seen: 1,
    revision_executed: 2,
    handler_revision: '0.1.0+sha256:cafe',
    raw_arguments: { branch: 'main', zeta: 1, alpha: [true, null, 'x'] },
    normalized_arguments: { branch: 'main', region: 'us-east-preview' },
    adapter_applied: 'deploy_preview@1->2',
    idempotency_key: null,
    args_digest: 'sha256:0001',
    approval: { mode: 'per-call', id: 'appr-9', decided_by: 'operator', decided_at: '2026-01-02T03:04:05.000Z', outcome: 'approved' },
    decision_path: ['admit', 'resolve:adapt', 'validate', 'normalize', 'idempotency', 'approve:per-call'],
    side_effect_started: false,
    at: '2026-01-02T03:04:00.000Z',
    ...over,
  };
}

export const sshTarget: TargetDetails = {
  kind: 'ssh',
  host: 'preview.internal',
  port: 22,
  user: 'deploy',
  argv: ['/srv/deploy.sh', 'main', 'us-east-preview'],
  host_key_fingerprint: 'SHA256:abc',
};

export const httpTarget: TargetDetails = { kind: 'http', method: 'POST', url: 'https://api.github.com/repos/o/r/issues' };

/** A clock that advances one second per reading, from a fixed start. */
/** A clock whose wall time moves one second each time it is read. */
export function steppingClock(start = '2026-03-01T00:00:00.000Z'): Clock {
  let t = Date.parse(start);
  return wallClock(() => new Date((t += 1000)));
}

export interface Child {
  readonly proc: ChildProcessWithoutNullStreams;
  /** Resolves with the next line the child prints on stdout. */
  nextLine(): Promise<string>;
  exited: Promise<number | null>;
}

/** Starts `fixtures/journal-child.ts` with `args` under `node --import tsx`. */
export function startChild(args: readonly string[]): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const lines: string[] = [];
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  let closed = false;
  const waiters: { res: (l: string) => void; rej: (e: Error) => void }[] = [];
  const gone = (): Error => new Error(`child output ended before the expected line; stderr: ${stderr.slice(0, 2000)}`);
  const rl = createInterface({ input: proc.stdout });
  rl.on('line', (l) => {
    const w = waiters.shift();
    if (w) w.res(l);
    else lines.push(l);
  });
  rl.on('close', () => {
    closed = true;
    for (const w of waiters.splice(0)) w.rej(gone());
  });
  const exited = new Promise<number | null>((res) => proc.on('exit', (code) => res(code)));
  return {
    proc,
    exited,
    nextLine() {
      const l = lines.shift();
      if (l !== undefined) return Promise.resolve(l);
      if (closed) return Promise.reject(gone());
      return new Promise((res, rej) => waiters.push({ res, rej }));
    },
  };
}
