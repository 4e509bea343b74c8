/**
 * @isolated: ink (with CI=true) keeps a process open when two of these files share one.
 * What the operator reads at the sizes docs/tui.md promises (80×24 up, and
 * 60×20 and 120×40 besides), on an emulated terminal: an ordinary
 * three-argument card fits with a badge and a status line; the key bar is
 * never cut (low-priority hints are left off first) and the reason a key is
 * not offered keeps its end; the queue line's per-session counts stay apart.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cellWidth } from '../../../src/rules/terminal-text.js';
import type { ApprovalCard } from '../../../src/tui/contract.js';
import { card } from './fake-client.js';
import { Screen } from './terminal.js';
import { startOnScreen } from './own-rows.js';

const args = { service: 'web', version: '1.4.2', region: 'eu-west-1' };
function threeArgs(over: Partial<ApprovalCard> = {}): ApprovalCard {
  return card({
    id: 'three-args-0001',
    raw_arguments: args,
    normalized_arguments: args,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    idempotency_key: null,
    target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: '/v1/deploy', query: [], headers: [], body: JSON.stringify(args) },
    ...over,
  });
}

/** Hints as the key bar draws them: a key, a space, its words, two spaces apart. */
const HINTS = /^(a approve once|d deny|n\/j\/↓ next|x (details|compact)|1-5 views|\? help|\/ filter|q quit|p\/k\/↑ previous|s approve|r deny)/;

function keyRows(rows: readonly string[]): string[] {
  return rows.filter((r) => HINTS.test(r));
}

describe('what fits the screen', () => {
  it('80×24: a three-argument card fits whole with a badge and a status line', async () => {
    const screen = new Screen(80, 24);
    const { quit } = startOnScreen([threeArgs()], screen, { locked: true });
    const t = await screen.waitFor((s) => s.includes('Approval 1 of 1') && s.includes('daemon locked: nothing can be decided'), 'the card, the badge and the status line');
    assert.doesNotMatch(t, /more rows/);
    for (const label of ['arg sizes', 'annotations', 'target', 'body', 'credential', 'arguments']) assert.match(t, new RegExp(`^${label} `, 'm'), label);
    assert.deepEqual(screen.wrappedRows(), []);
    await quit();
  });

  it('60×20: the key bar is not cut; the reason a key is not offered keeps its end', async () => {
    const screen = new Screen(60, 20);
    const long = threeArgs({ id: 'long-body-0001', target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: '/v1/deploy', query: [], headers: [], body: 'b'.repeat(2000) } });
    const { quit } = startOnScreen([long], screen);
    const t = await screen.waitFor((s) => /x opens\n┆ the details|x opens the details/.test(s) && s.includes('q quit'), 'the reason and the keys');
    const rows = screen.rows();
    const keys = keyRows(rows);
    assert.ok(keys.length >= 1 && keys.length <= 2, keys.join('\n'));
    for (const r of keys) assert.doesNotMatch(r, /…/, `a cut hint: ${r}`);
    for (const k of ['d deny', 'x details', 'q quit']) assert.ok(keys.join(' ').includes(k), `${k} on the bar`);
    assert.doesNotMatch(t, /x op…|x opens …/);
    for (const r of rows) assert.ok(cellWidth(r) <= 60, r);
    await quit();
  });

  it('60×20: with every deciding key offered, low-priority hints are left off, never q or a deciding key', async () => {
    const screen = new Screen(60, 20);
    const { quit } = startOnScreen([card({ id: 'small-0001' })], screen);
    await screen.waitFor((s) => s.includes('a approve once'), 'the deciding keys');
    const keys = keyRows(screen.rows());
    assert.ok(keys.length <= 2, keys.join('\n'));
    for (const r of keys) assert.doesNotMatch(r, /…/, `a cut hint: ${r}`);
    for (const k of ['a approve once', 's approve for session', 'd deny', 'r deny with reason', 'x details', 'q quit']) assert.ok(keys.join('  ').includes(k), `${k}: ${keys.join(' / ')}`);
    await quit();
  });

  it('80×24: a run of lone Hangul jamo is shown escaped and folded, a cut value says "+N more"', async () => {
    const screen = new Screen(80, 24);
    const jamo = { title: '\u1100'.repeat(40) };
    const { quit } = startOnScreen([card({ id: 'jamo-0001', raw_arguments: jamo, normalized_arguments: jamo, target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: '/v1/x', query: [], headers: [], body: JSON.stringify(jamo) } })], screen);
    const t = await screen.waitFor((s) => s.includes('Approval 1 of 1'), 'the card');
    assert.ok(!t.includes('\u1100'), 'no raw jamo on screen');
    assert.match(t, /\\u1100/);
    assert.match(t, /\+\d+ more characters/);
    assert.doesNotMatch(t, /┆ …$/m, 'a row cut to nothing');
    assert.deepEqual(screen.wrappedRows(), []);
    await quit();
  });

  it('the queue line: long client names are cut with "…", counts stay apart, sessions that do not fit are counted', async () => {
    for (const [w, h] of [[80, 24], [60, 20], [120, 40]] as const) {
      const screen = new Screen(w, h);
      const many = Array.from({ length: 130 }, (_, i) => card({
        id: `queued-${String(i).padStart(4, '0')}`,
        session: { id: `sess-${i % 5}`, client_name: `${'a-very-long-client-name-'.repeat(8)}${i % 5}`, client_version: '1', pid: 1 },
      }));
      const { quit } = startOnScreen(many, screen);
      await screen.waitFor((s) => s.includes('Approval 1 of 130'), 'the queue line');
      const head = screen.rows().find((r) => r.startsWith('Approval 1 of 130')) ?? '';
      assert.doesNotMatch(head, /more \d/, `${w}: a count runs into "more": ${head}`);
      assert.match(head, /(a-very-long-\S*… \d+|\+5 more sessions)/, `${w}: ${head}`);
      assert.match(head, /\+\d more sessions$/, `${w}: the sessions left off are counted: ${head}`);
      assert.ok(cellWidth(head) <= w, head);
      await quit();
    }
  });

  it('120×40: the card, the queue line and the keys each whole', async () => {
    const screen = new Screen(120, 40);
    const { quit } = startOnScreen([threeArgs()], screen);
    const t = await screen.waitFor((s) => s.includes('a approve once') && s.includes('q quit'), 'the card and the keys');
    assert.doesNotMatch(t, /more rows|…/);
    const keys = keyRows(screen.rows()).join('  ');
    for (const k of ['a approve once', 's approve for session', 'd deny', 'x details', '/ filter', '1-5 views', '? help', 'q quit']) assert.ok(keys.includes(k), `${k}: ${keys}`);
    await quit();
  });
});
