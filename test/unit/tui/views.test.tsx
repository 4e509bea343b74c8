/**
 * @isolated: ink (with CI=true) keeps a process open when two of these files share one.
 * The other views and the conventions (view switching, `?`, `/` filters,
 * back/quit), the daemon locking and the connection closing — on the real
 * TUI with an in-memory OperatorClient.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PosternError } from '../../../src/rules/errors.js';
import type { ActivityView, CatalogPendingView, GrantView, SessionView } from '../../../src/tui/contract.js';
import { FakeOperator, card, emptySnapshot, status } from './fake-client.js';
import { mount } from './harness.js';

function activity(over: Partial<ActivityView>): ActivityView {
  return {
    id: 'call-1',
    at: '2026-01-01T00:00:01.000Z',
    session_id: 'sess-one',
    tool: 'list_things',
    revision: 1,
    status: 'success',
    decision: 'auto',
    error_code: null,
    side_effect_started: false,
    duration_ms: 12,
    idempotency_key: null,
    ...over,
  };
}

const session = (id: string, name: string, ended: string | null): SessionView => ({
  id,
  client_name: name,
  client_version: '1.0',
  pid: 77,
  protocol_version: '2025-11-25',
  started_at: '2026-01-01T00:00:00.000Z',
  ended_at: ended,
  end_reason: ended === null ? null : 'closed',
});

const grant = (id: string, sessionId: string, tool: string): GrantView => ({
  id,
  session_id: sessionId,
  tool,
  revision: 2,
  scope: 'session',
  authority_digest: 'ad',
  granted_at: '2026-01-01T00:00:03.000Z',
  by: 'operator',
});

const pendingCatalog = (over: Partial<CatalogPendingView> = {}): CatalogPendingView => ({
  digest: 'd'.repeat(64),
  baseline_digest: 'b'.repeat(64),
  alarm: null,
  tools: 4,
  changes: [
    { tool: 'deploy_service', from: 1, to: 2, class: 'authority_widening', aspect: 'authority', reasons: ['new host api.other.example'] },
    { tool: 'list_things', from: 1, to: 2, class: 'metadata', aspect: 'tool', reasons: ['description changed'] },
  ],
  widening: true,
  widening_reasons: ['deploy_service reaches api.other.example'],
  gate: { ok: true, failures: [] },
  invalid: null,
  ...over,
});

describe('views', () => {
  it('number keys and Tab switch views; ? lists all keys; Esc goes back to approvals; q quits from any view', async () => {
    const c = new FakeOperator('operator', emptySnapshot());
    const m = mount(c);
    await m.waitFor((f) => f.includes('No calls are waiting'), 'approvals');
    m.press('2');
    await m.waitFor((f) => f.includes('No calls yet.'), 'activity');
    m.press('\t');
    await m.waitFor((f) => f.includes('No sessions.'), 'sessions');
    m.press('4');
    await m.waitFor((f) => f.includes('No session grants.'), 'grants');
    m.press('5');
    await m.waitFor((f) => f.includes('No catalog change is waiting.'), 'catalog');
    m.press('?');
    const h = await m.waitFor((f) => f.includes('Keys (any key closes'), 'help');
    for (const k of ['approve this call once', 'deny with a reason', 'revoke the selected grant', 'accept the pending catalog', 'filter']) assert.ok(h.includes(k), k);
    m.press('x');
    await m.waitFor((f) => f.includes('No catalog change is waiting.'), 'help closed');
    m.press('\x1b');
    await m.waitFor((f) => f.includes('No calls are waiting'), 'back to approvals');
    m.press('2');
    await m.waitFor((f) => f.includes('No calls yet.'), 'activity again');
    m.press('q');
    await m.quitted;
    m.unmount();
  });

  it('activity tails live records, keeps the newest per call, and filters with the filter shown', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ recent: [activity({ id: 'call-2', tool: 'second_call', at: '2026-01-01T00:00:02.000Z' }), activity({ id: 'call-1', tool: 'first_call' })] }));
    const m = mount(c);
    m.press('2');
    await m.waitFor((f) => f.includes('first_call') && f.includes('second_call'), 'the recent records');
    c.emit({ type: 'activity', record: activity({ id: 'call-3', tool: 'deploy_service', status: 'in_progress', decision: 'approved_once', session_id: 'sess-two' }) });
    await m.waitFor((f) => f.includes('deploy_service') && f.includes('in_progress'), 'a live record');
    c.emit({ type: 'activity', record: activity({ id: 'call-3', tool: 'deploy_service', status: 'error', decision: 'approved_once', error_code: 'TARGET_ERROR', session_id: 'sess-two' }) });
    const f = await m.waitFor((f) => f.includes('TARGET_ERROR'), 'the record advanced');
    assert.doesNotMatch(f, /in_progress/);
    assert.match(f, /3 total/);
    m.press('/');
    await m.waitFor((f) => f.includes('filter: '), 'the filter prompt');
    m.press('error');
    m.press('\r');
    const g = await m.waitFor((f) => f.includes('filter error') && f.includes('1 of 3'), 'the filter applied and shown');
    assert.doesNotMatch(g, /first_call/);
    m.press('/');
    await m.waitFor((f) => f.includes('filter: error'), 'the filter prompt with the filter');
    for (let i = 0; i < 5; i++) m.press('\x7f');
    m.press('tool:first');
    m.press('\r');
    const h = await m.waitFor((f) => f.includes('filter tool:first'), 'a field filter');
    assert.match(h, /first_call/);
    assert.doesNotMatch(h, /deploy_service/);
    m.unmount();
  });

  it('activity: a long session id and tool name are cut with a space before the next column', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ recent: [activity({ id: 'call-9', session_id: 'sess-7f3a9c21e4b8d0', tool: 'deploy_service_to_production_cluster', status: 'success', decision: 'approved_session' })] }));
    const m = mount(c);
    m.press('2');
    const f = await m.waitFor((t) => t.includes('deploy_service'), 'the record');
    const row = f.split('\n').find((r) => r.includes('deploy_service')) ?? '';
    assert.match(row, /sess-\S*… +deploy_service\S*… +success +approved_session/, row);
    const header = f.split('\n').find((r) => /\btime\b/.test(r)) ?? '';
    // The columns start where the header's names do (as drawn).
    for (const [name, value] of [['tool', 'deploy_service'], ['status', 'success'], ['decision', 'approved_session']] as const) {
      assert.equal(header.indexOf(` ${name}`) + 1, row.indexOf(value), `${name} column: ${header} / ${row}`);
    }
    m.unmount();
  });

  it('sessions show live ones first, past ones after, with their grants', async () => {
    const c = new FakeOperator(
      'operator',
      emptySnapshot({
        sessions: [session('sess-old', 'old-client', '2026-01-01T00:00:09.000Z'), session('sess-live', 'live-client', null)],
        grants: [grant('g1', 'sess-live', 'deploy_service')],
      }),
    );
    const m = mount(c);
    m.press('3');
    const f = await m.waitFor((f) => f.includes('live-client') && f.includes('old-client'), 'both sessions');
    assert.ok(f.indexOf('live-client') < f.indexOf('old-client'), 'live first');
    assert.match(f, /↳ grant deploy_service/);
    c.emit({ type: 'session.closed', id: 'sess-live', ended_at: '2026-01-01T00:01:00.000Z' });
    await m.waitFor((f) => f.includes('ended  sess-live'), 'the session ended');
    m.unmount();
  });

  it('grants are revoked with one key; an observer has no revoke key', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ grants: [grant('g1', 'sess-a', 'deploy_service'), grant('g2', 'sess-a', 'restart_service')] }));
    const m = mount(c);
    m.press('4');
    await m.waitFor((f) => f.includes('restart_service') && f.includes('r revoke'), 'the grants');
    m.press('j');
    await m.waitFor((f) => /› \S+ +sess-a +restart_service/.test(f), 'the second grant selected');
    m.press('r');
    const r = await c.nextRequest(0);
    assert.equal(r.op, 'grants.revoke');
    assert.deepEqual(r.params, { id: 'g2' });
    r.resolve({ revoked: grant('g2', 'sess-a', 'restart_service') });
    c.emit({ type: 'grant.revoked', id: 'g2', reason: 'revoked by the operator' });
    await m.waitFor((f) => f.includes('1 total') && f.includes('revoked the grant of restart_service'), 'the grant gone');
    m.unmount();

    const o = new FakeOperator('observer', emptySnapshot({ grants: [grant('g1', 'sess-a', 'deploy_service')] }));
    const mo = mount(o, { observe: true });
    mo.press('4');
    const f = await mo.waitFor((f) => f.includes('deploy_service'), 'the grants');
    assert.doesNotMatch(f, /r revoke/);
    mo.press('r');
    await mo.waitFor((f) => f.includes('observer (read-only)'), 'still observing');
    assert.equal(o.requests.length, 0);
    mo.unmount();
  });

  it('catalog changes show the classified diff; accept and reject ask first and name the digest', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ catalog: pendingCatalog() }));
    const m = mount(c);
    m.press('5');
    const f = await m.waitFor((f) => f.includes('Pending catalog dddddddddddddddd'), 'the pending catalog');
    assert.match(f, /WIDENS +deploy_service r1→r2 \[authority\] new host api\.other\.example/);
    assert.match(f, /metadata +list_things/);
    m.press('A');
    await m.waitFor((f) => f.includes('Accept catalog') && f.includes('y/N'), 'the question');
    m.press('n');
    await m.waitFor((f) => f.includes('A accept'), 'not accepted');
    assert.equal(c.requests.length, 0);
    m.press('A');
    await m.waitFor((f) => f.includes('y/N'), 'the question');
    m.press('y');
    const r = await c.nextRequest(0);
    assert.deepEqual([r.op, r.params], ['catalog.accept', { digest: 'd'.repeat(64) }]);
    r.resolve({ accepted: { digest: 'd'.repeat(64), sequence: 2, accepted_at: null, tools: 4 } });
    c.emit({ type: 'catalog.adopted', catalog: { digest: 'd'.repeat(64), sequence: 2, accepted_at: null, tools: 4 } });
    await m.waitFor((f) => f.includes('No catalog change is waiting.'), 'adopted');
    c.emit({ type: 'catalog.pending', pending: pendingCatalog({ digest: 'e'.repeat(64) }) });
    await m.waitFor((f) => f.includes('eeeeeeee'), 'another pending catalog');
    m.press('R');
    await m.waitFor((f) => f.includes('Reject catalog'), 'the question');
    m.press('y');
    const r2 = await c.nextRequest(1);
    assert.deepEqual([r2.op, r2.params], ['catalog.reject', { digest: 'e'.repeat(64) }]);
    m.unmount();
  });

  it('a catalog whose release gate failed cannot be accepted, and says why', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ catalog: pendingCatalog({ gate: { ok: false, failures: ['deploy_service breaks existing clients'] } }) }));
    const m = mount(c);
    m.press('5');
    const f = await m.waitFor((f) => f.includes('cannot accept: the release gate failed'), 'the reason');
    assert.doesNotMatch(f, /A accept/);
    m.press('A');
    await m.waitFor((f) => f.includes('gate '), 'still here');
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('survives the daemon locking: a badge, no deciding keys, and back when unlocked', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [card({ tool: 'first_tool' })] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('a approve once'), 'the card');
    c.emit({ type: 'daemon.locked', reason: 'the operator ran postern lock' });
    const f = await m.waitFor((f) => f.includes('daemon locked'), 'the badge');
    assert.doesNotMatch(f, /a approve once/);
    m.press('a');
    c.emit({ type: 'daemon.unlocked' });
    await m.waitFor((f) => f.includes('a approve once') && !(f.split('\n')[0] ?? '').includes('daemon locked'), 'unlocked');
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('a test-profile vault (key derivation below the production floor) is named on the status line; a production one is not', async () => {
    const cheap = new FakeOperator('operator', emptySnapshot({ status: status({ vault_kdf: { opslimit: 1, memlimit: 1048576, below_floor: true } }) }));
    const m = mount(cheap);
    const f = await m.waitFor((f) => f.includes('TEST VAULT'), 'the badge');
    assert.match(f.split('\n').slice(0, 2).join('\n'), /TEST VAULT: key derivation below the production floor/);
    m.unmount();
    const prod = new FakeOperator('operator', emptySnapshot());
    const p = mount(prod);
    const g = await p.waitFor((f) => f.includes('Postern'), 'the header');
    assert.doesNotMatch(g, /TEST VAULT/);
    p.unmount();
  });

  it('the approval page\'s run fingerprint is in the header while a page runs (the page shows the same)', async () => {
    const withPage = new FakeOperator('operator', emptySnapshot({ status: status({ page_run: 'K7Q2-9XWD' }) }));
    const m = mount(withPage);
    const f = await m.waitFor((f) => f.includes('page run'), 'the badge');
    assert.match(f.split('\n').slice(0, 2).join('\n'), / page run K7Q2-9XWD/);
    m.unmount();
  });

  it('journal shipping failing is a badge on the status line, from the snapshot and from events, gone once it ships again', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ status: status({ ship_problem: 'SHIP_UNAVAILABLE: cannot ship to db/audit: it cannot be reached' }) }));
    const m = mount(c);
    await m.waitFor((f) => f.split('\n').slice(0, 2).join('\n').includes('journal shipping failing'), 'the badge from the snapshot');
    c.emit({ type: 'ship.problem', problem: null });
    await m.waitFor((f) => f.includes('Postern') && !f.includes('journal shipping failing'), 'the badge gone');
    c.emit({ type: 'ship.problem', problem: 'SHIP_UNAVAILABLE: cannot ship to db/audit: the connection was closed' });
    await m.waitFor((f) => f.includes('journal shipping failing'), 'the badge from the event');
    m.unmount();
  });

  it('survives the connection closing: says so, decides nothing, quits without asking', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [card({ tool: 'first_tool' })] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('a approve once'), 'the card');
    c.drop(new PosternError('DAEMON_UNAVAILABLE', 'the daemon stopped'));
    await m.waitFor((f) => f.includes('disconnected') && f.includes('the daemon stopped'), 'the notice');
    m.press('a');
    m.press('q');
    await m.quitted;
    assert.equal(c.requests.length, 0);
    m.unmount();
  });

  it('the key that closes the help does its job: 2 opens activity, x the details; Esc only closes it', async () => {
    const c = new FakeOperator('operator', emptySnapshot({ pending: [card({ tool: 'first_tool' })] }));
    const m = mount(c);
    await m.waitFor((f) => f.includes('first_tool'), 'the card');
    m.press('?');
    await m.waitFor((f) => f.includes('Keys (any key closes'), 'help');
    m.press('2');
    await m.waitFor((f) => f.includes('No calls yet.'), 'help closed on the activity view');
    m.press('1');
    await m.waitFor((f) => f.includes('first_tool'), 'the card');
    m.press('?');
    await m.waitFor((f) => f.includes('Keys (any key closes'), 'help');
    m.press('x');
    await m.waitFor((f) => f.includes('x compact'), 'help closed on the details');
    m.press('?');
    await m.waitFor((f) => f.includes('Keys (any key closes'), 'help');
    m.press('\x1b');
    const f = await m.waitFor((f) => !f.includes('Keys (any key closes'), 'help closed');
    assert.match(f, /x compact/);
    assert.equal(m.quits, 0);
    m.unmount();
  });
});
