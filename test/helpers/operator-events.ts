/**
 * Waiting for the daemon's events instead of its log: an operator client
 * attached to a test daemon (the same authenticated channel and client the
 * CLI and the TUI use), subscribed once, with `next(pred)` to wait for the
 * next event that matches. Start the watch before the action it waits for.
 */
import assert from 'node:assert/strict';
import type { OperatorClient, OperatorEvent, OperatorEventEnvelope, OperatorSnapshot } from '../../src/protocol/operator/index.js';

export interface EventWatch {
  readonly client: OperatorClient;
  readonly snapshot: OperatorSnapshot;
  /** Every event received since the watch started, in seq order. */
  readonly events: readonly OperatorEventEnvelope[];
  /**
   * The first event after the previous match that satisfies `pred`. Fails
   * (never hangs) if the connection ends or `timeoutMs` passes first.
   */
  next<T extends OperatorEvent['type']>(type: T, pred?: (e: Extract<OperatorEvent, { type: T }>) => boolean, opts?: { timeoutMs?: number }): Promise<Extract<OperatorEvent, { type: T }>>;
  close(): void;
}

export async function watchEvents(connect: () => Promise<OperatorClient>): Promise<EventWatch> {
  const client = await connect();
  const events: OperatorEventEnvelope[] = [];
  let cursor = 0;
  const wakers = new Set<() => void>();
  const snapshot = await client.subscribe((e) => {
    events.push(e);
    for (const w of [...wakers]) w();
  });
  let ended: string | null = null;
  void client.closed.then((err) => {
    ended = err === null ? 'closed' : `${err.code}: ${err.message}`;
    for (const w of [...wakers]) w();
  });
  return {
    client,
    snapshot,
    events,
    async next(type, pred = () => true, opts = {}) {
      const deadline = opts.timeoutMs ?? 20_000;
      return new Promise((resolve, reject) => {
        const check = (): void => {
          for (let i = cursor; i < events.length; i++) {
            const e = events[i]!.event;
            if (e.type === type && pred(e as never)) {
              cursor = i + 1;
              done();
              resolve(e as never);
              return;
            }
          }
          if (ended !== null) {
            done();
            reject(new assert.AssertionError({ message: `no ${type} event before the operator connection ended (${ended})` }));
          }
        };
        const timer = setTimeout(() => {
          done();
          reject(new assert.AssertionError({ message: `no ${type} event within ${deadline} ms; saw ${events.slice(cursor).map((e) => e.event.type).join(', ') || 'nothing'}` }));
        }, deadline);
        const done = (): void => {
          clearTimeout(timer);
          wakers.delete(check);
        };
        wakers.add(check);
        check();
      });
    },
    close: () => client.close(),
  };
}
