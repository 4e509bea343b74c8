/**
 * Who decides the story's approvals. `DemoOperator` is the seam: the story
 * asks it to decide the next pending call of a tool and learns what was on
 * the card and what was decided. The headless operator here is a script over
 * the real operator channel (`connectOperator` + `approvals.decide`,
 * authenticated with the key derived from the demo vault) that approves as
 * the story suggests — for the session when the card allows it, once
 * otherwise, always bound to the card's call digest. The terminal UI can
 * implement the same interface by showing the card to a person.
 */
import type { ApprovalCard, OperatorVerdict } from '../protocol/approvals.js';
import { PosternError } from '../rules/errors.js';
import { connectOperator } from '../protocol/operator/connect.js';
import type { OperatorClient } from '../protocol/operator/index.js';

export interface ApprovalRequest {
  readonly tool: string;
  /** What the story would like: a session grant where the card allows it, or one approval. */
  readonly suggest: 'once' | 'session';
}

export interface DecidedApproval {
  readonly card: ApprovalCard;
  readonly verdict: OperatorVerdict;
}

export interface DemoOperator {
  /** Waits for the next pending call of `request.tool` and decides it. */
  decide(request: ApprovalRequest): Promise<DecidedApproval>;
  /** Cards that arrived and were not decided through `decide` (the story expects none). */
  undecided(): readonly ApprovalCard[];
  close(): void;
}

const CARD_WAIT_MS = 60_000;

export async function scriptedOperator(socketPath: string, key: Uint8Array): Promise<DemoOperator> {
  const conn: OperatorClient = await connectOperator(socketPath, key);
  const cards: ApprovalCard[] = [];
  let wake: (() => void) | null = null;
  const arrived = (card: ApprovalCard): void => {
    if (!cards.some((c) => c.id === card.id)) cards.push(card);
    wake?.();
  };
  for (const card of (await conn.subscribe((env) => {
    if (env.event.type === 'approval.added') arrived(env.event.card);
  })).pending) {
    arrived(card);
  }

  const nextCard = async (tool: string): Promise<ApprovalCard> => {
    let waited = false;
    const timer = setTimeout(() => {
      waited = true;
      wake?.();
    }, CARD_WAIT_MS);
    try {
      for (;;) {
        const i = cards.findIndex((c) => c.tool === tool);
        if (i >= 0) return cards.splice(i, 1)[0] as ApprovalCard;
        if (waited) throw new PosternError('DEMO_FAILED', `no approval request for ${tool} reached the operator within ${CARD_WAIT_MS / 1000} s`);
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      clearTimeout(timer);
      wake = null;
    }
  };

  return {
    async decide(request) {
      const card = await nextCard(request.tool);
      const scope = request.suggest === 'session' && card.scope_allowed === 'session' ? 'session' : 'once';
      const verdict: OperatorVerdict = { verdict: 'approve', scope, call_digest: card.call_digest };
      await conn.request('approvals.decide', { approval_id: card.id, verdict });
      return { card, verdict };
    },
    undecided: () => [...cards],
    close: () => conn.close(),
  };
}
