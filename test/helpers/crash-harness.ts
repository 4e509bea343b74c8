/**
 * The harness of the kill-at-every-file-event tests (src/home/change-record.ts;
 * THREATS 13, 15): one prepared home (a completed idempotency key against a
 * fake target), restored from a pristine copy before each run; a command run
 * once per file event N with POSTERN_TEST_KILL_AT_FILE_EVENT=N (the process
 * SIGKILLs itself right after its Nth write, fsync, rename or unlink) until a
 * run completes without reaching N; after each kill the home is proved whole:
 * `doctor --unlock` (which finishes the interrupted change) succeeds with
 * exactly one of the candidate passphrases, the other opens nothing, no change
 * record is left, the daemon starts, and the completed key replays its stored
 * result without a new request. One test file per command, so they run side
 * by side.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cp, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FakeHttpServer } from './fake-http.js';
import { canary, httpFixture, localTarget, writeTool } from './fixture.js';
import { KILL_AT_FILE_EVENT } from '../../src/vault/file-events.js';
import { PASSPHRASE, type Installation } from './daemon.js';
import { TEST_VAULT_OPTIONS } from './cli.js';
import { openVault } from '../../src/vault/index.js';
import { isPosternError } from '../../src/rules/errors.js';

const TOKEN = canary('crash');
export const NEW_PASSPHRASE = 'crash-new-passphrase-0123';
const KEY = `key-${randomBytes(8).toString('hex')}`;

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

const NO_APPROVAL = 'A write that needs no approval.';
/** The tools of the prepared home (`extra`: a second tool). */
export const crashTools = (extra: boolean): Record<string, unknown> => ({ quick_write: writeTool('/echo', NO_APPROVAL), ...(extra ? { second_write: writeTool('/second', NO_APPROVAL) } : {}) });
/** The catalog of the prepared home (`extra`: a second tool; `idempotencyHeader`: the key goes to the target, so its request log names it). */
export const catalogFor = (origin: string, extra: boolean, idempotencyHeader = false) => ({
  targets: { local: localTarget(origin, idempotencyHeader ? { idempotency_header: true } : {}) },
  tools: crashTools(extra),
});

/** What a command's test adds to the proof after each kill. */
export interface ProofOptions {
  /** Before the proof: a command whose kill may leave the state before it (which refuses as it did) runs it to its end here. */
  readonly settle?: (where: string) => Promise<void>;
  /** Whether the completed key must replay (false: the home's journal is another one now, which does not know it). */
  readonly replays?: () => Promise<boolean>;
}

/** Runs `args` killed at event 1, 2, … until it completes; returns how many events it has. */
type KillAtEveryEvent = (
  name: string,
  prepare: () => Promise<void>,
  args: () => string[],
  candidates: readonly string[],
  afterKill: (at: number, working: string) => unknown,
  input?: string,
  proof?: ProofOptions,
) => Promise<number>;

export interface CrashHarness {
  readonly inst: Installation;
  readonly http: FakeHttpServer;
  /** The idempotency key completed in the prepared home. */
  readonly key: string;
  readonly killAtEveryEvent: KillAtEveryEvent;
}

/** Sets up (in `before`) and tears down (in `after`) the prepared home of the enclosing `describe`. */
export function crashHarness(): CrashHarness {
  let inst!: Installation;
  let http!: FakeHttpServer;
  let pristine: string;
  let stored: Record<string, unknown>;

  before(async () => {
    ({ http, inst } = await httpFixture({ token: TOKEN, tools: crashTools(false) }));
    const agent = await inst.client();
    const r = (await agent.callTool({ name: 'quick_write', arguments: { title: 'before', idempotency_key: KEY } })) as Result;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    stored = r.structuredContent!;
    await agent.close();
    await inst.stopDaemon();
    pristine = join(inst.sb.dir, 'pristine');
    await cp(inst.sb.home, pristine, { recursive: true, preserveTimestamps: true });
  });

  after(async () => {
    inst.sb.assertNeverPrinted(TOKEN, 'the token');
    await inst.cleanup();
    await http.close();
  });

  const restore = async (): Promise<void> => {
    await rm(inst.sb.home, { recursive: true, force: true });
    await cp(pristine, inst.sb.home, { recursive: true, preserveTimestamps: true });
  };

  const opens = async (pass: string): Promise<boolean> => {
    try {
      (await openVault(join(inst.sb.home, 'vault.pvlt'), Buffer.from(pass), TEST_VAULT_OPTIONS)).lock();
      return true;
    } catch (e) {
      if (isPosternError(e, 'VAULT_AUTH')) return false;
      throw e;
    }
  };

  /** Opens the home as the next command would, then proves it whole: one passphrase, doctor, daemon, replay. */
  async function proveWhole(where: string, candidates: readonly string[], proof: ProofOptions = {}): Promise<string> {
    await proof.settle?.(where);
    let working: string | undefined;
    for (const pass of candidates) {
      await writeFile(inst.passFile, `${pass}\n`);
      const doctor = await inst.sb.run(['doctor', '--unlock', '--passphrase-file', inst.passFile]);
      if (doctor.code === 0) {
        working = pass;
        assert.doesNotMatch(doctor.stdout, /does not verify|MISMATCH|unauthenticated/i, `${where}: doctor --unlock\n${doctor.stdout}`);
        break;
      }
      assert.match(doctor.stderr, /VAULT_AUTH/, `${where}: doctor failed otherwise than on the passphrase\n${doctor.stdout}${doctor.stderr}`);
    }
    assert.ok(working !== undefined, `${where}: no passphrase opens the home`);
    const openers = [];
    for (const pass of candidates) if (await opens(pass)) openers.push(pass);
    assert.deepEqual(openers, [working], `${where}: exactly one passphrase opens the vault`);
    assert.ok(!(await readdir(inst.sb.home)).includes('change.pending'), `${where}: the change record was finished`);
    const before = http.requests.length;
    const replays = (await proof.replays?.()) ?? true;
    await inst.startDaemon();
    try {
      if (!replays) return working;
      const agent = await inst.client();
      const r = (await agent.callTool({ name: 'quick_write', arguments: { title: 'before', idempotency_key: KEY } })) as Result;
      await agent.close();
      assert.equal(r.structuredContent?.['replayed'], true, `${where}: ${JSON.stringify(r)}`);
      assert.deepEqual(r.structuredContent?.['body'], stored['body'], `${where}: the stored result`);
      assert.equal(http.requests.length, before, `${where}: no new request`);
    } finally {
      await inst.stopDaemon();
    }
    return working;
  }

  /** Runs `args` killed at event 1, 2, … until it completes; returns how many events it has. */
  const killAtEveryEvent: KillAtEveryEvent = async (name, prepare, args, candidates, afterKill, input, proof) => {
    for (let at = 1; at < 200; at++) {
      await restore();
      await prepare();
      await writeFile(inst.passFile, `${PASSPHRASE}\n`);
      const r = await inst.sb.run(args(), { env: { [KILL_AT_FILE_EVENT]: String(at) }, ...(input === undefined ? {} : { input }) });
      if (r.code !== null) {
        assert.equal(r.code, 0, `${name} without a kill: ${r.stderr}`);
        const working = await proveWhole(`${name}, completed`, candidates, proof);
        await afterKill(at, working);
        return at - 1;
      }
      await afterKill(at, await proveWhole(`${name}, killed at file event ${at}`, candidates, proof));
    }
    throw new Error(`${name} never completed`);
  };

  return {
    get inst() {
      return inst;
    },
    get http() {
      return http;
    },
    key: KEY,
    killAtEveryEvent,
  };
}
