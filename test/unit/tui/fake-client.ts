/**
 * An in-memory OperatorClient for the TUI tests: it serves a snapshot,
 * pushes events the test emits, and records every request. Requests stay
 * open until the test answers them (or `autoAnswer` answers a decision the
 * way the daemon would: the result, then an approval.resolved event).
 */
import type {
  ApprovalCard,
  ApprovalDecision,
  EventEnvelope,
  OperatorClient,
  OperatorEvent,
  OperatorSnapshot,
  StatusView,
} from '../../../src/tui/contract.js';
import type { PosternError } from '../../../src/rules/errors.js';

export interface RecordedRequest {
  readonly op: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read the params the UI built
  readonly params: any;
  resolve(result: unknown): void;
  reject(e: unknown): void;
}

export function status(over: Partial<StatusView> = {}): StatusView {
  return {
    protocol_version: 2,
    daemon_version: '0.1.0',
    pid: 100,
    locked: false,
    lock_reason: null,
    started_at: '2026-01-01T00:00:00.000Z',
    catalog: { digest: 'c'.repeat(64), sequence: 1, accepted_at: null, tools: 3 },
    catalog_pending: false,
    sessions: 0,
    pending: 0,
    grants: 0,
    approval_timeout_seconds: 120,
    vault_kdf: { opslimit: 3, memlimit: 268435456, below_floor: false },
    role: 'operator',
    ...over,
  };
}

export function emptySnapshot(over: Partial<OperatorSnapshot> = {}): OperatorSnapshot {
  return { pending: [], sessions: [], grants: [], recent: [], catalog: null, status: status(), last_seq: 0, gap: false, ...over };
}

export class FakeOperator implements OperatorClient {
  readonly requests: RecordedRequest[] = [];
  readonly closed: Promise<PosternError | null>;
  #closeNow!: (e: PosternError | null) => void;
  #listener: ((e: EventEnvelope) => void) | null = null;
  #seq: number;
  #onRequest: ((r: RecordedRequest) => void)[] = [];

  constructor(
    readonly role: 'operator' | 'observer',
    readonly snapshot: OperatorSnapshot = emptySnapshot(),
    readonly autoAnswer = false,
  ) {
    this.#seq = snapshot.last_seq;
    this.closed = new Promise<PosternError | null>((r) => {
      this.#closeNow = r;
    });
  }

  readonly request = ((op: string, params: unknown): Promise<unknown> => {
    return new Promise((resolve, reject) => {
      const r: RecordedRequest = { op, params, resolve, reject };
      this.requests.push(r);
      if (this.autoAnswer && op === 'approvals.decide') this.answerDecision(r);
      for (const f of this.#onRequest.splice(0)) f(r);
    });
  }) as OperatorClient['request'];

  /** Answers a decision as the daemon does: the decision, then the resolved event. */
  answerDecision(r: RecordedRequest): ApprovalDecision {
    const p = r.params as { approval_id: string; verdict: { verdict: string; scope?: 'once' | 'session'; reason?: string | null } };
    const at = '2026-01-01T00:00:10.000Z';
    const d: ApprovalDecision =
      p.verdict.verdict === 'approve'
        ? { kind: 'approved', scope: p.verdict.scope ?? 'once', by: 'operator', at }
        : { kind: 'denied', reason: p.verdict.reason ?? null, by: 'operator', at };
    r.resolve(d);
    this.emit({ type: 'approval.resolved', id: p.approval_id, decision: d });
    return d;
  }

  /** Resolves with the next request sent (or the latest one already sent after `after`). */
  nextRequest(after = this.requests.length): Promise<RecordedRequest> {
    const have = this.requests[after];
    if (have !== undefined) return Promise.resolve(have);
    return new Promise((resolve) => this.#onRequest.push(resolve));
  }

  subscribe(onEvent: (e: EventEnvelope) => void): Promise<OperatorSnapshot> {
    this.#listener = onEvent;
    return Promise.resolve(this.snapshot);
  }

  emit(event: OperatorEvent): void {
    this.#seq += 1;
    this.#listener?.({ seq: this.#seq, at: '2026-01-01T00:00:00.000Z', event });
  }

  close(): void {
    this.#closeNow(null);
  }

  /** The connection ends from the daemon's side. */
  drop(e: PosternError): void {
    this.#closeNow(e);
  }
}

let n = 0;
export function card(over: Partial<ApprovalCard> & { id?: string } = {}): ApprovalCard {
  n += 1;
  const id = over.id ?? `card-${String(n).padStart(4, '0')}-0000000000000000`;
  return {
    id,
    session: { id: 'sess-aaaa1111', client_name: 'claude-code', client_version: '2.1.0', pid: 4242 },
    tool: 'deploy_service',
    effect: 'write',
    revision: 3,
    revision_seen: 3,
    scope_allowed: 'session',
    reasons: ['the tool writes'],
    widening: [],
    target: {
      kind: 'http',
      method: 'POST',
      origin: 'https://api.example.com',
      host: 'api.example.com',
      port: 443,
      path: '/v1/deploy',
      query: [],
      headers: [],
      body: '{"service":"web"}',
    },
    credential: 'deploy-token',
    raw_arguments: { service: 'web' },
    normalized_arguments: { service: 'web' },
    adapter: null,
    annotations: null,
    idempotency_key: null,
    call_digest: `digest-${id}`,
    limits: [],
    requested_at: '2026-01-01T00:00:00.000Z',
    expires_at: '2026-01-01T00:02:00.000Z',
    ...over,
  };
}
