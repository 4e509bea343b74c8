/**
 * The TUI's reducer as tables: what each key does in each view and mode,
 * with no rendering — the decision pause on an injected monotonic time, Esc
 * that never quits, the help whose closing key does its job, the focus that
 * shows the oldest card at once, the approvals filter and order, and the key
 * tables themselves (every key listed acts, none is listed twice).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { OperatorEvent, OperatorSnapshot } from '../../../src/tui/contract.js';
import { DECISION_PAUSE_MS } from '../../../src/tui/views/focus.js';
import { press, typed, type KeyPress } from '../../../src/tui/keys/keymap.js';
import { CARD_KEYS, DETAILS_KEYS, GLOBAL_KEYS, KEY_SECTIONS, viewKeys } from '../../../src/tui/keys/tables.js';
import { refocus, settle, step } from '../../../src/tui/reducer.js';
import { initialState, reduce, type OperatorState } from '../../../src/tui/state.js';
import { screenLines } from '../../../src/tui/screen.js';
import { VIEWS, initialUi, type Env, type Step, type UiRequest, type UiState, type ViewId } from '../../../src/tui/ui.js';
import { UNSEEN_REASON } from '../../../src/tui/views/approvals.js';
import { card, emptySnapshot } from './fake-client.js';
import { presentation } from '../../../src/protocol/operator/index.js';
import { T0 } from './harness.js';

const A = card({ id: 'aaaa-card', tool: 'first_tool', requested_at: '2026-01-01T00:00:00.000Z' });
const B = card({ id: 'bbbb-card', tool: 'second_tool', requested_at: '2026-01-01T00:00:05.000Z', session: { id: 'sess-other', client_name: 'other-agent', client_version: '1', pid: 7 } });
const C = card({ id: 'cccc-card', tool: 'third_tool', requested_at: '2026-01-01T00:00:09.000Z' });

/** A little world: the daemon's state, the UI, the monotonic time, and every request and quit so far. */
class World {
  state: OperatorState;
  ui: UiState;
  t: number;
  seq = 0;
  readonly requests: UiRequest[] = [];
  quits = 0;
  last: Step | null = null;
  width = 100;

  constructor(snapshot: Partial<OperatorSnapshot> = {}, readonly observe = false, at = 0) {
    this.t = at;
    this.state = reduce(initialState, { type: 'snapshot', snapshot: emptySnapshot(snapshot) });
    this.ui = refocus(initialUi, this.state, this.t);
  }

  env(): Env {
    return { observe: this.observe, width: this.width, rows: 30, wallMs: T0, monoMs: this.t };
  }

  /** Presses keys at the current time (or `at`). */
  press(k: KeyPress | string, at?: number): Step {
    if (at !== undefined) this.t = at;
    const s = step(this.ui, this.state, typeof k === 'string' ? press(k) : k, this.env());
    this.ui = s.ui;
    if (s.request !== undefined) this.requests.push(s.request);
    if (s.quit === true) this.quits += 1;
    this.last = s;
    return s;
  }

  keys(names: readonly string[], at?: number): void {
    for (const n of names) this.press(n, at);
  }

  event(event: OperatorEvent, at?: number): void {
    if (at !== undefined) this.t = at;
    this.seq += 1;
    this.state = reduce(this.state, { type: 'event', envelope: { seq: this.seq, at: '2026-01-01T00:00:00.000Z', event } });
    this.ui = refocus(this.ui, this.state, this.t);
  }

  /** The daemon answers a decision: the result, then the resolved event. */
  answer(r: UiRequest, at?: number): void {
    this.ui = settle(this.ui, r, { ok: true });
    if (r.op !== 'approvals.decide') return;
    const v = r.params.verdict;
    const by = 'operator';
    const decision = v.verdict === 'approve' ? { kind: 'approved' as const, scope: v.scope, by, at: '2026-01-01T00:00:10.000Z' } : { kind: 'denied' as const, reason: v.reason, by, at: '2026-01-01T00:00:10.000Z' };
    this.event({ type: 'approval.resolved', id: r.params.approval_id, decision }, at);
  }

  focused(): string | null {
    return this.ui.focusId;
  }
}

const decided = (w: World): [string, string][] =>
  w.requests.flatMap((r) => (r.op === 'approvals.decide' ? [[r.params.approval_id, r.params.verdict.verdict === 'approve' ? `approve ${r.params.verdict.scope}` : 'deny']] : []));

describe('the decision pause', () => {
  const P = DECISION_PAUSE_MS;
  const rows: ReadonlyArray<{ readonly name: string; readonly run: (w: World) => void; readonly want: [string, string][]; readonly message?: RegExp }> = [
    { name: 'a key just after the card appeared is ignored, and the bar says why', run: (w) => w.press('a', 100), want: [], message: /^a ignored: the card on screen just changed/ },
    { name: 'a key once the pause has passed decides', run: (w) => w.press('a', P), want: [[A.id, 'approve once']] },
    { name: 'a held key: each press inside the pause restarts it; the first press a full pause after the last one decides', run: (w) => (w.press('a', 100), w.press('a', 650), w.press('a', 650 + P - 1), w.press('a', 650 + P - 1 + P)), want: [[A.id, 'approve once']] },
    {
      name: 'a double-pressed a approves the card read, not the next one',
      run: (w) => {
        w.press('a', 1000);
        w.answer(w.requests[0]!, 1010);
        w.press('a', 1050);
      },
      want: [[A.id, 'approve once']],
    },
    {
      name: 'after a decision the next card takes the focus, and decides after the pause',
      run: (w) => {
        w.press('a', 1000);
        w.answer(w.requests[0]!, 1010);
        w.press('d', 1010 + P);
      },
      want: [[A.id, 'approve once'], [B.id, 'deny']],
    },
    {
      name: 'moving to another card starts the pause; a refused key restarts it',
      run: (w) => {
        w.press('n', 1000);
        w.press('d', 1200);
        w.press('d', 1700);
        w.press('d', 1700 + P);
      },
      want: [[B.id, 'deny']],
    },
    {
      name: 'the card coming back into view (from another view) starts the pause',
      run: (w) => {
        w.press('2', 1000);
        w.press('1', 5000);
        w.press('a', 5100);
        w.press('a', 5100 + P);
      },
      want: [[A.id, 'approve once']],
    },
    {
      name: 'closing the help with a deciding key: the help closes, the card comes into view, the key waits',
      run: (w) => {
        w.press('?', 1000);
        w.press('a', 5000);
        w.press('a', 5000 + P);
      },
      want: [[A.id, 'approve once']],
    },
    {
      name: 'a new arrival does not move the card on screen, so it does not pause it',
      run: (w) => {
        w.event({ type: 'approval.added', card: card({ id: '0000-older', requested_at: '2025-12-31T23:59:00.000Z' }) }, 1000);
        w.press('a', 1001);
      },
      want: [[A.id, 'approve once']],
    },
    {
      name: 'the reason prompt is opened by r only after the pause; Enter then sends',
      run: (w) => {
        w.press('r', 100);
        w.press('r', 100 + P);
        w.press(typed('not now'));
        w.press('enter');
      },
      want: [[A.id, 'deny']],
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const w = new World({ pending: [A, B, C] });
      assert.equal(w.focused(), A.id);
      r.run(w);
      assert.deepEqual(decided(w), r.want);
      if (r.message !== undefined) assert.match(w.ui.message ?? '', r.message);
    });
  }

  it('the pause is measured on the injected clock only: the same keys at other times decide differently', () => {
    const early = new World({ pending: [A] }, false, 10_000);
    early.press('a', 10_000 + P - 1);
    const late = new World({ pending: [A] }, false, 10_000);
    late.press('a', 10_000 + P);
    assert.deepEqual([decided(early), decided(late)], [[], [[A.id, 'approve once']]]);
  });
});

describe('Esc never quits or locks', () => {
  const setups: ReadonlyArray<[string, () => World]> = [
    ['an empty queue', () => new World()],
    ['cards waiting', () => new World({ pending: [A, B] })],
    ['an observer', () => new World({ pending: [A] }, true)],
    ['the details open', () => { const w = new World({ pending: [A] }); w.press('x'); return w; }],
    ['the help open', () => { const w = new World({ pending: [A] }); w.press('?'); return w; }],
    ['a confirmation asked', () => { const w = new World({ pending: [A] }); w.press('q'); return w; }],
    ['a filter being typed', () => { const w = new World({ pending: [A] }); w.keys(['2', '/']); return w; }],
    ['a deny reason being typed', () => { const w = new World({ pending: [A] }); w.press('r', DECISION_PAUSE_MS); return w; }],
  ];
  for (const [what, make] of setups) {
    for (const v of VIEWS) {
      it(`${what}, ${v} view: Esc pressed five times asks nothing of the daemon and does not quit`, () => {
        const w = make();
        if (w.ui.mode.kind === 'normal') w.press(String(VIEWS.indexOf(v) + 1));
        for (let i = 0; i < 5; i++) w.press('esc', w.t + 1000);
        assert.equal(w.quits, 0);
        assert.deepEqual(w.requests, []);
        assert.notEqual(w.ui.mode.kind, 'confirm');
      });
    }
  }

  it('a letter typed with Alt (Esc + q as one sequence) is not q', () => {
    const w = new World();
    w.press('meta-q');
    assert.equal(w.quits, 0);
  });

  const backs: ReadonlyArray<[string, (w: World) => void, Partial<UiState>]> = [
    ['the details close first', (w) => w.keys(['x', 'esc']), { expanded: false, view: 'approvals' }],
    ['then a filter clears', (w) => w.keys(['2', '/', 'e', 'enter', 'esc']), { view: 'activity', filter: { ...initialUi.filter } }],
    ['then the view goes back to approvals', (w) => w.keys(['4', 'esc']), { view: 'approvals' }],
    ['at the top it only says how to quit', (w) => w.keys(['esc']), { view: 'approvals', message: 'Esc goes back; q quits' }],
  ];
  for (const [name, run, want] of backs) {
    it(`Esc goes back: ${name}`, () => {
      const w = new World({ pending: [A] });
      run(w);
      for (const [k, v] of Object.entries(want)) assert.deepEqual(w.ui[k as keyof UiState], v, k);
    });
  }
});

describe('quitting stays on its keys', () => {
  const rows: ReadonlyArray<[string, () => World, readonly string[], 'quit' | 'asks' | 'stays']> = [
    ['q at the top with nothing waiting quits', () => new World(), ['q'], 'quit'],
    ['q with a call waiting asks; y quits', () => new World({ pending: [A] }), ['q', 'y'], 'quit'],
    ['q with a call waiting asks; any other key keeps the TUI', () => new World({ pending: [A] }), ['q', 'n'], 'stays'],
    ['q with a call waiting asks; Esc keeps the TUI', () => new World({ pending: [A] }), ['q', 'esc'], 'stays'],
    ['q in another view quits too (Esc goes back)', () => new World(), ['3', 'q'], 'quit'],
    ['q in the details with a call waiting asks', () => new World({ pending: [A] }), ['x', 'q'], 'asks'],
    ['Esc in another view goes back, it does not quit', () => new World(), ['3', 'esc'], 'stays'],
    ['Ctrl-C asks while calls wait', () => new World({ pending: [A] }), ['ctrl-c'], 'asks'],
    ['Ctrl-C twice quits', () => new World({ pending: [A] }), ['ctrl-c', 'ctrl-c'], 'quit'],
    ['Ctrl-C from a prompt asks too', () => new World({ pending: [A] }), ['2', '/', 'ctrl-c'], 'asks'],
    ['an observer quits without being asked', () => new World({ pending: [A] }, true), ['q'], 'quit'],
  ];
  for (const [name, make, keys, want] of rows) {
    it(name, () => {
      const w = make();
      w.keys(keys);
      const got = w.quits > 0 ? 'quit' : w.ui.mode.kind === 'confirm' ? 'asks' : 'stays';
      assert.equal(got, want);
    });
  }
});

describe('the help: the key that closes it does its job', () => {
  const rows: ReadonlyArray<[string, ViewId, string, Partial<Pick<UiState, 'view' | 'expanded'>> & { mode?: string; quit?: true }]> = [
    ['1 switches to approvals', 'catalog', '1', { view: 'approvals', mode: 'normal' }],
    ['2 switches to activity', 'approvals', '2', { view: 'activity', mode: 'normal' }],
    ['Tab switches to the next view', 'sessions', 'tab', { view: 'grants', mode: 'normal' }],
    ['x opens the details', 'approvals', 'x', { view: 'approvals', expanded: true, mode: 'normal' }],
    ['/ opens the filter', 'activity', '/', { view: 'activity', mode: 'filter' }],
    ['q quits from another view', 'grants', 'q', { quit: true }],
    ['q quits from approvals', 'approvals', 'q', { quit: true }],
    ['? only closes it', 'sessions', '?', { view: 'sessions', mode: 'normal' }],
    ['Esc only closes it', 'sessions', 'esc', { view: 'sessions', mode: 'normal' }],
  ];
  for (const [name, from, key, want] of rows) {
    it(name, () => {
      const w = new World();
      w.keys([String(VIEWS.indexOf(from) + 1), '?']);
      assert.equal(w.ui.mode.kind, 'help');
      const s = w.press(key);
      if (want.quit === true) return assert.equal(s.quit, true);
      if (want.view !== undefined) assert.equal(w.ui.view, want.view);
      if (want.expanded !== undefined) assert.equal(w.ui.expanded, want.expanded);
      if (want.mode !== undefined) assert.equal(w.ui.mode.kind, want.mode);
    });
  }
});

describe('the card on screen', () => {
  it('attaching with cards waiting shows the oldest at once, in the step that brought them', () => {
    const w = new World({ pending: [C, B, A] });
    assert.equal(w.focused(), A.id);
    const empty = new World();
    assert.equal(empty.focused(), null);
    empty.event({ type: 'approval.added', card: B });
    assert.equal(empty.focused(), B.id);
  });

  const rows: ReadonlyArray<[string, (w: World) => void, string | null]> = [
    ['a new, older arrival does not replace it', (w) => w.event({ type: 'approval.added', card: card({ id: '0000-older', requested_at: '2025-12-31T23:00:00.000Z' }) }), A.id],
    ['a card resolved elsewhere stays named', (w) => w.event({ type: 'approval.resolved', id: A.id, decision: { kind: 'timeout', at: '2026-01-01T00:02:00.000Z' } }), A.id],
    ['… until n shows the card at its place', (w) => (w.event({ type: 'approval.resolved', id: A.id, decision: { kind: 'timeout', at: '2026-01-01T00:02:00.000Z' } }), w.press('n')), B.id],
    ['the operator\'s own decision moves on to the card at its place', (w) => (w.press('n', 0), w.press('a', 5000), w.answer(w.requests[0]!)), C.id],
    ['deciding the last card moves back to the one before', (w) => (w.keys(['n', 'n'], 0), w.press('a', 5000), w.answer(w.requests[0]!)), B.id],
    ['p at the first card stays', (w) => w.press('p'), A.id],
    ['a filter that hides the card moves to the first card it shows', (w) => (w.press('/'), w.press(typed('tool:third')), w.press('enter')), C.id],
  ];
  for (const [name, run, want] of rows) {
    it(name, () => {
      const w = new World({ pending: [A, B, C] });
      run(w);
      assert.equal(w.focused(), want);
    });
  }

  it('a decision that failed keeps the card, with the daemon\'s error on it', () => {
    const w = new World({ pending: [A, B] });
    w.press('a', DECISION_PAUSE_MS);
    const r = w.requests[0]!;
    assert.equal(w.ui.inflight[A.id], 'approve once');
    w.ui = settle(w.ui, r, { ok: false, error: { code: 'APPROVAL_MISMATCH', message: 'the call differs' } });
    assert.deepEqual([w.focused(), w.ui.inflight, w.ui.cardError[A.id], w.ui.decided], [A.id, {}, 'APPROVAL_MISMATCH: the call differs', {}]);
  });
});

describe('the approvals queue: / filters, o orders by session', () => {
  const order = (w: World): string[] => {
    const seen: string[] = [];
    w.keys(['p', 'p', 'p']);
    for (let i = 0; i < 4; i++) {
      if (w.focused() !== null && !seen.includes(w.focused()!)) seen.push(w.focused()!);
      w.press('n');
    }
    return seen;
  };
  const rows: ReadonlyArray<[string, readonly (KeyPress | string)[], string[]]> = [
    ['oldest first', [], [A.id, B.id, C.id]],
    ['session by session, each oldest first', ['o'], [A.id, C.id, B.id]],
    ['o again: oldest first', ['o', 'o'], [A.id, B.id, C.id]],
    ['a filter by session', ['/', typed('session:sess-other'), 'enter'], [B.id]],
    ['a filter by client name', ['/', typed('client:claude'), 'enter'], [A.id, C.id]],
    ['a filter cleared by Esc', ['/', typed('client:claude'), 'enter', 'esc'], [A.id, B.id, C.id]],
  ];
  for (const [name, keys, want] of rows) {
    it(name, () => {
      const w = new World({ pending: [A, B, C] });
      for (const k of keys) w.press(k);
      assert.deepEqual(order(w), want);
    });
  }
});

describe('prompts and confirmations', () => {
  const catalog = { digest: 'd'.repeat(64), baseline_digest: null, alarm: null, tools: 1, changes: [], widening: false, widening_reasons: [], gate: { ok: true, failures: [] }, invalid: null };

  it('a pasted reason lands whole, backspace edits it, Enter denies the card the prompt was opened on', () => {
    const w = new World({ pending: [A, B] });
    w.press('r', DECISION_PAUSE_MS);
    w.press(typed('not on a Fridayy'));
    w.press('backspace');
    w.press('enter');
    assert.deepEqual(w.requests, [{ op: 'approvals.decide', params: { approval_id: A.id, verdict: { verdict: 'deny', reason: 'not on a Friday' } }, label: 'deny with reason' }]);
  });

  it('catalog A asks, names the digest, and y sends the accept', () => {
    const w = new World({ catalog });
    w.keys(['5', 'A']);
    assert.equal(w.ui.mode.kind, 'confirm');
    assert.deepEqual(w.requests, []);
    w.press('y');
    assert.deepEqual(w.requests, [{ op: 'catalog.accept', params: { digest: 'd'.repeat(64) }, done: 'catalog accepted' }]);
  });

  it('an observer\'s keys never ask anything of the daemon, whatever is pressed where', () => {
    const grants = [{ id: 'g1', session_id: 's', tool: 't', revision: 1, scope: 'session' as const, authority_digest: 'x', granted_at: '2026-01-01T00:00:00.000Z', by: 'operator' }];
    const w = new World({ pending: [A, B], catalog, grants }, true);
    const all = [...new Set([...GLOBAL_KEYS, ...CARD_KEYS, ...DETAILS_KEYS, ...VIEWS.flatMap((v) => viewKeys({ ...initialUi, view: v }))].flatMap((e) => e.keys))].filter((k) => k !== 'q' && k !== 'ctrl-c');
    for (const v of ['1', '2', '3', '4', '5']) {
      w.press(v, w.t + 1000);
      for (const k of all) {
        w.press(k, w.t + 1000);
        w.press('y', w.t + 1000);
        w.press('esc');
      }
    }
    assert.deepEqual(w.requests, []);
  });
});

describe('the key tables', () => {
  it('no key name answers to two entries of a view, together with the keys of everywhere', () => {
    const lists = [CARD_KEYS, DETAILS_KEYS, ...VIEWS.filter((v) => v !== 'approvals').map((v) => viewKeys({ ...initialUi, view: v }))];
    for (const list of lists) {
      const names = [...list, ...GLOBAL_KEYS].flatMap((e) => e.keys);
      assert.deepEqual(names.filter((n, i) => names.indexOf(n) !== i), []);
    }
  });

  it('the help lists every entry of every table once', () => {
    const listed = KEY_SECTIONS.flatMap((s) => s.keys);
    const all = new Set([...GLOBAL_KEYS, ...CARD_KEYS, ...DETAILS_KEYS, ...VIEWS.flatMap((v) => viewKeys({ ...initialUi, view: v }))]);
    assert.equal(listed.length, new Set(listed).size);
    assert.deepEqual(new Set(listed), all);
  });
});

describe('approving a card the compact view cuts needs every row of its details seen', () => {
  const big = 'x'.repeat(1900);
  const BIG = card({
    id: 'big-body-card',
    target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: '/v1/issues', query: [], headers: [], body: JSON.stringify({ body: big, title: 'ok' }) },
    raw_arguments: { body: big, title: 'ok' },
    normalized_arguments: { body: big, title: 'ok' },
  });
  const P = DECISION_PAUSE_MS;
  const decided = (w: World): number => w.requests.filter((r) => r.op === 'approvals.decide').length;
  const pages = (n: number): string[] => Array.from({ length: n }, () => 'space');
  const refused = (w: World): void => assert.match(w.ui.message ?? '', new RegExp(`^${UNSEEN_REASON}: (\\d+/\\d+ rows unseen|x opens the details)`));

  const rows: [string, string[], boolean][] = [
    // keys pressed (after the pause), then `a`: is a decision sent?
    ['the compact card (the body cut)', [], false],
    ['the details, at their top', ['x'], false],
    ['the details, one page down', ['x', 'space'], false],
    ['the details, jumped to their end (G): the middle never drawn', ['x', 'G'], false],
    ['back in the compact card after jumping to the end', ['x', 'G', 'esc'], false],
    ['the details paged through to their end', ['x', ...pages(8)], true],
    ['back in the compact card after paging through', ['x', ...pages(8), 'esc'], true],
    ['the details read a row at a time', ['x', ...Array.from({ length: 80 }, () => 'j')], true],
    ['the top, then the end, then back up a row: the middle still unseen', ['x', 'G', 'k'], false],
    ['the top, then the end, then g and G again: the middle still unseen', ['x', 'G', 'g', 'G', 'esc', 'x', 'G'], false],
  ];
  for (const [where, keys, sends] of rows) {
    it(`${where}: a ${sends ? 'approves once, naming the presentation seen' : 'is refused, saying what is left'}`, () => {
      const w = new World({ pending: [BIG] });
      w.keys(keys, P);
      w.press('a', P);
      assert.equal(decided(w), sends ? 1 : 0);
      if (!sends) refused(w);
      else {
        const v = w.requests.find((r) => r.op === 'approvals.decide')?.params;
        assert.deepEqual(v && 'verdict' in v ? v.verdict : null, { verdict: 'approve', scope: 'once', call_digest: BIG.call_digest, seen: { presentation: presentation(BIG).digest } });
      }
    });
  }

  it('a resize starts the count again: rows of another width are other rows', () => {
    const w = new World({ pending: [BIG] });
    w.keys(['x', 'space'], P);
    const covered = w.ui.coverage[BIG.id];
    assert.ok(covered !== undefined && covered.ranges.length === 1);
    w.width = 60;
    w.press('j', P);
    assert.equal(w.ui.coverage[BIG.id]?.width, 60);
  });

  it('the seen mark is the card\'s own: the next card is judged afresh', () => {
    const BIG2 = card({ ...BIG, id: 'big-body-card-2', requested_at: '2026-01-01T00:00:09.000Z' });
    const w = new World({ pending: [BIG, BIG2] });
    w.keys(['x', ...pages(8), 'esc', 'n'], P);
    w.press('a', 2 * P + 1);
    assert.equal(decided(w), 0);
    refused(w);
  });

  it('a card the compact view shows whole is approved at once', () => {
    const w = new World({ pending: [A] });
    w.press('a', P);
    assert.equal(decided(w), 1);
  });
});

describe('pairing a device from the TUI (P)', () => {
  const frame = (w: World): string => screenLines(w.env(), w.state, w.ui).map((l) => l.map((s) => s.text).join('')).join('\n');
  const pairing = { code: 'K7Q2-9XWD', name: 'phone', url: 'http://127.0.0.1:47110/', expires_at: '2026-01-01T00:05:00.000Z', tls_sha256: null, page_key: 'RKQS-H66C', run_fingerprint: 'F743-EXCV' };

  it('P asks for a name; Enter sends devices.pair; the answer shows the code and the link until the next key', () => {
    const w = new World({ pending: [A] });
    w.press('P');
    assert.equal(w.ui.mode.kind, 'pair-name');
    assert.match(frame(w), /pair a device named:/);
    w.press(typed('phone'));
    w.press('enter');
    assert.deepEqual(w.requests, [{ op: 'devices.pair', params: { name: 'phone' }, done: 'pairing opened for phone' }]);
    w.ui = settle(w.ui, w.requests[0]!, { ok: true, result: pairing });
    const shown = frame(w);
    assert.match(shown, /pair phone: code K7Q2-9XWD \(single use, until 2026-01-01T00:05:00\.000Z/);
    assert.match(shown, /open http:\/\/127\.0\.0\.1:47110\/#pair=K7Q2-9XWD&key=RKQS-H66C/);
    w.press('n');
    assert.doesNotMatch(frame(w), /K7Q2-9XWD/, 'any key hides the code');
  });

  it('a name that is not printable ASCII words, or none, sends nothing; Esc cancels', () => {
    const w = new World();
    for (const name of ['', 'tab\there', 'ph\u202eone']) {
      w.press('P');
      if (name !== '') w.press(typed(name));
      w.press('enter');
      assert.equal(w.ui.mode.kind, 'normal');
    }
    w.press('P');
    w.press(typed('phone'));
    w.press('esc');
    assert.deepEqual(w.requests, []);
  });

  it('an observer cannot pair, and a refusal from the daemon is shown as its code and message', () => {
    const o = new World({}, true);
    o.press('P');
    assert.equal(o.ui.mode.kind, 'normal');
    assert.match(o.ui.message ?? '', /observer/);
    const w = new World();
    w.press('P');
    w.press(typed('phone'));
    w.press('enter');
    w.ui = settle(w.ui, w.requests[0]!, { ok: false, error: { code: 'USAGE', message: 'this daemon has no approval page' } });
    assert.match(frame(w), /USAGE: this daemon has no approval page/);
  });

  it('an answer that is not a pairing is not shown as one', () => {
    const w = new World();
    w.press('P');
    w.press(typed('phone'));
    w.press('enter');
    w.ui = settle(w.ui, w.requests[0]!, { ok: true, result: { code: 'x'.repeat(99) } });
    assert.equal(w.ui.pairing, null);
  });
});
