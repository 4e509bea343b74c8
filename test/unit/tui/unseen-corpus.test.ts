/**
 * The unseen-content corpus (test/helpers/unseen-corpus.ts) in the TUI's
 * reducer, with a real approval queue behind it as the daemon: for every
 * case, `x`, `G`, Esc, `a` sends nothing (the bar says how many rows are
 * unseen) — the end of the details is not the whole card — and the daemon
 * would refuse that approval anyway (APPROVAL_UNSEEN); paged through every
 * row, `a` sends an approval naming the card's presentation, which the queue
 * accepts. The queue's decision stands for the target: nothing is approved
 * before every row was on screen.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApprovalQueue } from '../../../src/approvals/queue.js';
import { systemClock } from '../../../src/clock/index.js';
import { presentation } from '../../../src/protocol/operator/index.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { DECISION_PAUSE_MS } from '../../../src/tui/views/focus.js';
import { press } from '../../../src/tui/keys/keymap.js';
import { refocus, step } from '../../../src/tui/reducer.js';
import { initialState, reduce, type OperatorState } from '../../../src/tui/state.js';
import { initialUi, type Env, type UiRequest, type UiState } from '../../../src/tui/ui.js';
import { UNSEEN_REASON } from '../../../src/tui/views/approvals.js';
import { draft } from '../operator/helpers.js';
import { emptySnapshot } from './fake-client.js';
import { T0 } from './harness.js';
import { UNSEEN_CORPUS, type UnseenCase } from '../../helpers/unseen-corpus.js';
import type { ApprovalCard } from '../../../src/protocol/approvals.js';

/** The card the daemon would open for a corpus call (its arguments as the body, raw and normalized alike). */
function corpusCard(q: ApprovalQueue, c: UnseenCase): { card: ApprovalCard; decision: Promise<unknown> } {
  const body = JSON.stringify(c.args);
  return q.request(
    draft({
      tool: c.tool,
      scope_allowed: 'per-call',
      target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: '/echo', query: [], headers: [], body },
      raw_arguments: c.args,
      normalized_arguments: c.args,
      call_digest: `sha256:${c.name}`,
    }),
    { timeoutMs: 60_000 },
  );
}

class Tui {
  ui: UiState;
  readonly state: OperatorState;
  readonly sent: UiRequest[] = [];
  constructor(card: ApprovalCard) {
    this.state = reduce(initialState, { type: 'snapshot', snapshot: emptySnapshot({ pending: [card] }) });
    this.ui = refocus(initialUi, this.state, 0);
  }
  env(): Env {
    return { observe: false, width: 80, rows: 24, wallMs: T0, monoMs: DECISION_PAUSE_MS };
  }
  keys(...names: string[]): void {
    for (const n of names) {
      const s = step(this.ui, this.state, press(n), this.env());
      this.ui = s.ui;
      if (s.request !== undefined) this.sent.push(s.request);
    }
  }
}

describe('the unseen-content corpus in the TUI', () => {
  for (const c of UNSEEN_CORPUS) {
    it(`${c.name}: x, G, Esc, a approves nothing; paged through every row, a approves and the daemon accepts it`, async () => {
      const q = new ApprovalQueue(systemClock);
      const { card, decision } = corpusCard(q, c);
      assert.equal(presentation(card).needsSeen, true);
      const t = new Tui(card);
      t.keys('x', 'G', 'esc', 'a');
      assert.equal(t.sent.length, 0, 'nothing was sent');
      assert.match(t.ui.message ?? '', new RegExp(`^${UNSEEN_REASON}: \\d+/\\d+ rows unseen`));
      assert.throws(() => q.decide(card.id, { verdict: 'approve', scope: 'once', call_digest: card.call_digest }, 'op'), (e) => isPosternError(e, 'APPROVAL_UNSEEN'), 'the daemon refuses an approval that does not name the presentation');
      t.keys('x', 'g');
      for (let i = 0; i < 400 && t.ui.seen[card.id] !== true; i++) t.keys('space');
      t.keys('a');
      assert.equal(t.sent.length, 1);
      const req = t.sent[0];
      if (req?.op !== 'approvals.decide') throw new Error('the request is not a decision');
      assert.deepEqual(req.params.verdict, { verdict: 'approve', scope: 'once', call_digest: card.call_digest, seen: { presentation: presentation(card).digest } });
      q.decide(card.id, req.params.verdict, 'op');
      assert.equal(((await decision) as { kind: string }).kind, 'approved');
    });
  }
});
