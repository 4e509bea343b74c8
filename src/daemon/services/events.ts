/**
 * The daemon's event bus: every change an operator front end shows —
 * approvals added, resolved or gone stale, call activity, sessions, grants,
 * lock, catalog adoption and pending catalogs — as one numbered stream
 * (events of src/protocol/operator/messages.ts).
 *
 * Invariants: seq increases by one per event from 1; the last `capacity`
 * envelopes are kept for replay (`since`), older ones are forgotten and a
 * replay that needed them reports `gap`; delivery is synchronous and never
 * waits for a subscriber: a listener that throws is removed, and one that
 * falls behind is dropped by its own connection (its transport's backlog),
 * never by slowing the daemon; events carry no secret values.
 */
import type { Clock } from '../../clock/index.js';
import type { OperatorEvent, OperatorEventEnvelope } from '../../protocol/operator/index.js';

const REPLAY_CAPACITY = 1_000;

type EventListener = (e: OperatorEventEnvelope) => void;

export class EventBus {
  readonly #ring: OperatorEventEnvelope[] = [];
  readonly #listeners = new Set<EventListener>();
  readonly #clock: Clock;
  readonly #capacity: number;
  #seq = 0;

  constructor(clock: Clock, capacity = REPLAY_CAPACITY) {
    this.#clock = clock;
    this.#capacity = Math.max(1, capacity);
  }

  get lastSeq(): number {
    return this.#seq;
  }

  emit(event: OperatorEvent): OperatorEventEnvelope {
    const env: OperatorEventEnvelope = { seq: ++this.#seq, at: this.#clock.now().toISOString(), event };
    this.#ring.push(env);
    if (this.#ring.length > this.#capacity) this.#ring.splice(0, this.#ring.length - this.#capacity);
    for (const l of [...this.#listeners]) {
      try {
        l(env);
      } catch {
        this.#listeners.delete(l);
      }
    }
    return env;
  }

  /** The retained envelopes after `seq`, oldest first; `gap` when some after it are no longer retained. */
  since(seq: number): { events: OperatorEventEnvelope[]; gap: boolean } {
    const oldest = this.#ring[0]?.seq ?? this.#seq + 1;
    const events = this.#ring.filter((e) => e.seq > seq);
    return { events, gap: seq + 1 < oldest && seq < this.#seq };
  }

  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  get subscribers(): number {
    return this.#listeners.size;
  }
}
