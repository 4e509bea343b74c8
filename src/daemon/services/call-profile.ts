/**
 * Where the daemon's calls spend their time, phase by phase, since the daemon
 * started: the profile behind the README's performance explanation and
 * `npm run bench` (operator op `calls.profile`, read-only).
 *
 * A phase runs from one step of a call's decision path (trail.ts) to the
 * next, or to a timing-only mark (`journal:outcome`, `respond`): admit,
 * resolve, validate, idempotency, approve, journal:intent, execute, redact…
 * Durations come from the injected monotonic clock. The profile holds names
 * and sums only (never an argument or a value): a step's name is cut at its
 * first space, colon-suffixed detail past the phase (`limits:per_session 3/10`
 * → `limits:per_session`) is kept only up to 40 characters, and at most
 * MAX_PHASES names are kept (others add to `other`), so an agent cannot grow it.
 */
import type { CallsProfileView } from '../../protocol/operator/index.js';

const MAX_PHASES = 48;

interface Sum {
  n: number;
  total: number;
}

export class CallProfile {
  readonly #phases = new Map<string, Sum>();
  #calls = 0;
  #totalMs = 0;

  /** `ms` spent in `phase` by one call. */
  add(phase: string, ms: number): void {
    const name = this.#name(phase);
    const s = this.#phases.get(name);
    if (s === undefined) this.#phases.set(name, { n: 1, total: ms });
    else {
      s.n++;
      s.total += ms;
    }
  }

  /** One call ended after `ms` in the daemon. */
  ended(ms: number): void {
    this.#calls++;
    this.#totalMs += ms;
  }

  view(): CallsProfileView {
    const per = (total: number): number => (this.#calls === 0 ? 0 : round(total / this.#calls));
    return {
      calls: this.#calls,
      mean_ms: per(this.#totalMs),
      phases: [...this.#phases].map(([phase, s]) => ({ phase, calls: s.n, mean_ms: round(s.total / s.n), per_call_ms: per(s.total) })),
    };
  }

  #name(step: string): string {
    const name = step.split(' ')[0]!.slice(0, 40);
    return this.#phases.has(name) || this.#phases.size < MAX_PHASES - 1 ? name : 'other';
  }
}

const round = (ms: number): number => Math.round(ms * 1000) / 1000;
