/**
 * The call as stages (src/daemon/pipeline/stages): the orchestrator on its
 * own (order, answers, refusals, releases), admission as a table, and the
 * stage list as documented — over real services in this process (a cheap
 * vault, real journals), no daemon, no network.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { parseCatalog } from '../../../src/contracts/index.js';
import { createVault, openVault, withVaultWriter } from '../../../src/vault/index.js';
import { openJournals, type Journals } from '../../../src/journal/index.js';
import { parseConfig } from '../../../src/daemon/services/config.js';
import type { Services, SessionInfo } from '../../../src/daemon/pipeline/context.js';
import { inProcessServices } from '../../../src/daemon/in-process.js';
import { Trail } from '../../../src/daemon/pipeline/trail.js';
import { CALL_STAGES, runStages } from '../../../src/daemon/pipeline/stages/index.js';
import { admission } from '../../../src/daemon/pipeline/stages/admission/index.js';
import { need, holding, type CallState } from '../../../src/daemon/pipeline/stages/call-state.js';
import { answer, next, refuse, type Stage } from '../../../src/daemon/pipeline/stages/step.js';
import { PosternError } from '../../../src/rules/errors.js';
import { ManualClock } from '../../helpers/clock.js';
import { CHEAP } from '../vault/helpers.js';

/** True only when no member of T is optional or may be undefined (checked by the type-check). */
type NoOptional<T> = { [K in keyof T]-?: undefined extends T[K] ? K : never }[keyof T] extends never ? true : false;
const servicesHaveNoOptionalMember: NoOptional<Services> = true;

const SECRET = 'stages-canary-token-0123456789';

describe('call stages', () => {
  let dir: string;
  let journals: Journals;
  let svc: Services;
  const clock = new ManualClock('2031-07-15T12:00:00Z');
  const session: SessionInfo = { id: 's-stages', clientName: 'unit', clientVersion: '1', protocolVersion: '2025-11-25', pid: null, runId: null, agentRelease: null, seen: new Map(), listedToolset: null };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'postern-stages-'));
    const pass = Buffer.from('stages-passphrase');
    await createVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    await withVaultWriter(join(dir, 'vault.pvlt'), pass, (v) => v.add({ name: 'api-token', kind: 'http_bearer', fields: {}, secret: { token: Buffer.from(SECRET) } }), CHEAP);
    const vault = await openVault(join(dir, 'vault.pvlt'), pass, CHEAP);
    const input = { type: 'object', properties: { t: { type: 'string', maxLength: 50 } }, required: ['t'] };
    const text = stringify({
      targets: { local: { http: { origin: 'http://127.0.0.1:9', credential: 'api-token', auth: 'bearer', allow_private: true } } },
      tools: {
        note: { description: 'Write a note.', effect: 'write', approval: 'none', revisions: [{ revision: 1, input, http: { target: 'local', method: 'POST', path: '/n', body: { t: '{t}' } } }] },
        look: { description: 'Read.', effect: 'read', approval: 'none', revisions: [{ revision: 1, input, http: { target: 'local', method: 'GET', path: '/r', query: { t: '{t}' } } }] },
      },
    });
    journals = openJournals(join(dir, 'journal'), { clock });
    svc = inProcessServices({ vault, catalog: parseCatalog(text, 'catalog.yaml'), digest: 'c'.repeat(64), journals, config: parseConfig('approval_timeout_seconds: 60', 'config.yaml'), clock }, { http: null });
  });
  after(async () => {
    journals.close();
    await rm(dir, { recursive: true, force: true });
  });

  const callOf = (name: string, args: unknown): CallState => {
    const snapshot = svc.state.snapshot();
    const req = { name, arguments: args, meta: {}, signal: new AbortController().signal, progress: () => undefined };
    return { svc, session, req, trail: new Trail(svc, session, name, snapshot.handlerRevision, `call-${Math.random()}`), snapshot, releases: [] };
  };
  const rejectedCode = (callId: string): string | null => journals.activity.getCall(callId)?.rejection?.error_code ?? null;

  it('the services a call reaches have no optional member (a wiring that forgets one does not compile)', () => {
    assert.equal(servicesHaveNoOptionalMember, true);
  });

  it('the orchestrator runs the stages in order and stops at the first answer; what the call holds is released in reverse', async () => {
    const seen: string[] = [];
    const stage = (name: string, then: (c: CallState) => ReturnType<Stage>): Stage => (c) => {
      seen.push(name);
      return then(c);
    };
    const stages: [string, Stage][] = [
      ['a', stage('a', (c) => next(holding(c, () => seen.push('release a'))))],
      ['b', stage('b', (c) => next(holding(c, () => seen.push('release b'))))],
      ['c', stage('c', () => answer({ content: [{ type: 'text', text: 'answered' }] }))],
      ['d', stage('d', (c) => next(c))],
    ];
    const r = await runStages(callOf('note', {}), stages);
    assert.deepEqual(r.content, [{ type: 'text', text: 'answered' }]);
    assert.deepEqual(seen, ['a', 'b', 'c', 'release b', 'release a']);
  });

  it('a refusal, a throw and a stage-order defect each end the call with a typed, journaled error and release what it holds', async () => {
    const cases: { name: string; stage: Stage; code: string }[] = [
      { name: 'refuse', stage: () => refuse(new PosternError('CONTRACT_STALE', 'changed')), code: 'CONTRACT_STALE' },
      { name: 'throw', stage: () => Promise.reject(new PosternError('VALIDATION_FAILED', 'bad')), code: 'VALIDATION_FAILED' },
      { name: 'order', stage: (c) => next({ ...c, plan: need(c, 'plan') }), code: 'INTERNAL' },
      { name: 'foreign throw', stage: () => Promise.reject(new Error('boom')), code: 'INTERNAL' },
    ];
    for (const k of cases) {
      let released = 0;
      const call = callOf('note', {});
      const r = await runStages(call, [
        ['hold', (c) => next(holding(c, () => void (released += 1)))],
        [k.name, k.stage],
      ]);
      assert.equal(r.isError, true, k.name);
      assert.equal((r.structuredContent as { error_code: string }).error_code, k.code, k.name);
      assert.equal(released, 1, `${k.name}: released once`);
      assert.equal(rejectedCode(call.trail.callId), k.code, `${k.name}: journaled as a rejection`);
    }
  });

  it('a refusing stage that holds something hands it back to be released', async () => {
    let zeroed = false;
    const r = await runStages(callOf('note', {}), [['take', (c) => refuse(new PosternError('CREDENTIAL_MISSING', 'gone'), holding(c, () => void (zeroed = true)))]]);
    assert.equal(r.isError, true);
    assert.equal(zeroed, true);
  });

  it('admission, as a table: what goes on and what is refused before anything is planned', () => {
    const table: { name: string; tool: string; args: unknown; code: string | null }[] = [
      { name: 'a write with a key', tool: 'note', args: { t: 'x', idempotency_key: 'stage-key-0001' }, code: null },
      { name: 'a read without a key', tool: 'look', args: { t: 'x' }, code: null },
      { name: 'a write without a key', tool: 'note', args: { t: 'x' }, code: 'IDEMPOTENCY_KEY_REQUIRED' },
      { name: 'a key that is not a string', tool: 'note', args: { t: 'x', idempotency_key: 7 }, code: 'VALIDATION_FAILED' },
      { name: 'an unknown tool', tool: 'nope', args: {}, code: 'TOOL_NOT_FOUND' },
      { name: 'a vault secret in the arguments', tool: 'look', args: { t: SECRET }, code: 'SECRET_IN_ARGUMENTS' },
      { name: 'arguments that are not an object', tool: 'look', args: [1, 2], code: 'VALIDATION_FAILED' },
    ];
    for (const row of table) {
      let step;
      try {
        step = admission(callOf(row.tool, row.args));
      } catch (e) {
        step = refuse(e);
      }
      if (row.code === null) {
        assert.equal(step.kind, 'next', `${row.name}: ${step.kind === 'refuse' ? String(step.error) : ''}`);
        if (step.kind === 'next') assert.equal(need(step.call, 'admitted').tool.name, row.tool, row.name);
      } else {
        assert.equal(step.kind, 'refuse', row.name);
        if (step.kind === 'refuse') assert.equal((step.error as PosternError).code, row.code, row.name);
      }
    }
  });

  it('the stage list is the documented order: nothing runs before its intent, the last re-check before the charge and one after the intent', () => {
    assert.deepEqual(
      CALL_STAGES.map(([name]) => name),
      ['admission', 'planning', 'idempotency key', 'credential present', 'limits check', 'approval', 'take credential', 're-check before the charge', 'limits charge', 'intent', 're-check after the intent', 'execution', 'outcome'],
    );
  });
});
