// @subject time: countdowns (run again a year ahead by .ci/run)
/**
 * THREATS class 3 on the card view (src/protocol/display/card-view.ts):
 * hostile strings are shown escaped, long values folded with "+N more",
 * and session approval is offered only for a card shown in full that does
 * not widen authority. An MCP annotation never lowers the risk shown.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ApprovalCard } from '../../../src/protocol/approvals.js';
import { cardView, targetSummary, unusualHost } from '../../../src/protocol/display/card-view.js';
import { assertInert, draft } from './helpers.js';

const card = (over: Partial<ApprovalCard> = {}): ApprovalCard => ({ ...draft(), annotations: null, limits: [], id: 'card-1', requested_at: '2031-01-01T00:00:00.000Z', expires_at: '2031-01-01T00:02:00.000Z', ...over });

const HOSTILE = [
  '\x1b[2K\rtarget        GET https://safe.example/ok',
  'a\u202Eevil\u202C',
  'zero\u200Bwidth',
  '\x9b31mC1',
  '\x1b]8;;https://x\x07link\x1b]8;;\x07',
  '\x1b]52;c;ZXZpbA==\x07',
  '\x1bP+q\x1b\\',
  'ma\u{E0100}in',
  'tag\u{E0041}',
];

describe('card view', () => {
  it('every hostile value is escaped: no row contains a control, format or invisible character', () => {
    for (const h of HOSTILE) {
      const v = cardView(card({ tool: h, credential: h, session: { id: h, client_name: h, client_version: h, pid: 1 }, raw_arguments: { t: h }, normalized_arguments: { t: h }, idempotency_key: h, reasons: [h], widening: [h] }));
      for (const r of v.rows) assertInert(`${r.label}${r.value}`);
      assert.ok(v.rows.some((r) => r.value.includes('\\')), `escaped ${JSON.stringify(h)}`);
    }
  });

  it('shows the resolved target, credential name, idempotency key and expiry; raw and normalized only when they differ', () => {
    const same = cardView(card());
    const labels = same.rows.map((r) => r.label);
    for (const l of ['session', 'tool', 'revision', 'effect', 'target', 'host', 'method', 'path', 'credential', 'arguments', 'idempotency', 'expires']) assert.ok(labels.includes(l), l);
    assert.ok(!labels.includes('raw args'));
    const differ = cardView(card({ raw_arguments: { n: '1' }, normalized_arguments: { n: 1 }, adapter: 'r1→r2: n as number' }));
    assert.deepEqual(differ.rows.filter((r) => r.label === 'raw args' || r.label === 'normalized').map((r) => r.value), ['{"n":"1"}', '{"n":1}']);
    assert.equal(targetSummary(card()), 'POST https://api.example.com/repos/a/b/issues');
  });

  it('SSH cards show host, user, every argv entry exactly and the host-key status', () => {
    const v = cardView(card({ target: { kind: 'ssh', host: 'db.example', port: 22, user: 'deploy', argv: ['rm', '-rf', '/tmp/x y'], command: "rm -rf '/tmp/x y'", host_key: 'SHA256:abc' } }));
    const row = (l: string): string | undefined => v.rows.find((r) => r.label === l)?.value;
    assert.equal(row('user'), 'deploy');
    assert.equal(row('argv[2]'), '/tmp/x y');
    assert.equal(row('host key'), 'pinned SHA256:abc');
  });

  it('a value past the limit is folded with a visible "+N more": not fully shown, no session approval', () => {
    const long = `${' '.repeat(10_000)}rm -rf /`;
    const v = cardView(card({ raw_arguments: { cmd: long }, normalized_arguments: { cmd: long } }));
    assert.equal(v.fullyShown, false);
    assert.ok(v.hidden > 0);
    assert.ok(v.rows.some((r) => /… \+\d+ more$/.test(r.value)));
    assert.deepEqual(v.sessionApproval.offered, false);
    assert.match(v.sessionApproval.offered ? '' : v.sessionApproval.why, /not shown/);
    assert.equal(cardView(card()).sessionApproval.offered, true);
  });

  it('session approval is not offered for a widening card, nor for a per-call one, and says why', () => {
    const w = cardView(card({ widening: ['adds host evil.example'] }));
    assert.ok(!w.sessionApproval.offered && /widens authority/.test(w.sessionApproval.why));
    assert.ok(w.rows.some((r) => r.label === 'WIDENS' && r.tone === 'danger'));
    const p = cardView(card({ scope_allowed: 'per-call' }));
    assert.ok(!p.sessionApproval.offered && /every call/.test(p.sessionApproval.why));
  });

  it('an annotation that claims less than the effect class is shown as such, beside the effect class', () => {
    const v = cardView(card({ effect: 'destructive', annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false } }));
    const effect = v.rows.find((r) => r.label === 'effect');
    const ann = v.rows.find((r) => r.label === 'annotations');
    assert.equal(effect?.value, 'destructive');
    assert.equal(effect?.tone, 'danger');
    assert.equal(ann?.tone, 'danger');
    assert.match(ann?.value ?? '', /claims less than the effect class destructive/);
  });

  it('flags non-ASCII and punycode hosts', () => {
    assert.ok(unusualHost('xn--pple-43d.com'));
    assert.ok(unusualHost('аpple.com'));
    assert.ok(!unusualHost('api.example.com'));
    const v = cardView(card({ target: { kind: 'http', method: 'GET', origin: 'https://xn--pple-43d.com', host: 'xn--pple-43d.com', port: 443, path: '/', query: [], headers: [], body: null } }));
    assert.equal(v.rows.find((r) => r.label === 'host')?.tone, 'danger');
  });
});

describe('card view: limits', () => {
  it('shows each limit as "N of M" in its scope; the last one left is a notice', () => {
    const v = cardView(card({ limits: [{ limit: 'per_session', used: 3, max: 10 }, { limit: 'per_minute', used: 4, max: 5 }] }));
    const rows = v.rows.filter((r) => r.label === 'limit').map((r) => [r.value, r.tone]);
    assert.deepEqual(rows, [['per_session: 3 of 10 this session', 'normal'], ['per_minute: 4 of 5 in the last minute', 'notice']]);
    assert.equal(cardView(card()).rows.some((r) => r.label === 'limit'), false);
  });
});
