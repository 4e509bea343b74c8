/**
 * Counting calls against the catalog's limits (contracts/catalog/limits.ts gives a
 * call's effective limits): per minute and in flight per tool across all
 * sessions, per session per (tool, session), per run per (tool, run id).
 *
 * The one rule set, used twice by the pipeline: `check` before approval (a
 * call over a limit never reaches the queue; nothing is counted) and `charge`
 * just before the intent is journaled — the synchronous step that both checks
 * again and counts, so concurrent calls cannot all slip under a limit while
 * they wait for approval. Only executed calls cost: a call refused, denied,
 * timed out or answered as a replay is never charged; a charge whose intent
 * the journal refused is refunded. An in-flight slot is held from the charge
 * until `end()`.
 *
 * The journal is the one truth: at start `fromJournal` counts every journaled
 * intent (per session, per run id, and those of the last minute, mapped onto
 * the monotonic clock), so the counts survive a restart. Windows use the
 * monotonic clock; the error's `retry_after` is whole seconds, or null where
 * waiting does not help (a per-session or per-run budget is spent).
 */
import type { Clock } from '../../clock/index.js';
import type { Limits } from '../../contracts/index.js';
import type { CallHead, LimitHistory } from '../../journal/index.js';
import { PosternError } from '../../rules/errors.js';
import { describeUsage, type LimitName, type LimitUsage } from '../../protocol/limit-usage.js';

const MINUTE_MS = 60_000;

/** One call, as the limits see it. */
export interface LimitSubject {
  readonly tool: string;
  readonly limits: Limits;
  readonly sessionId: string;
  /** The run id the call declared (or its session did); a call without one is not counted per run. */
  readonly runId: string | null;
}

type LimitCheck = { readonly kind: 'within'; readonly usage: readonly LimitUsage[] } | { readonly kind: 'limited'; readonly error: PosternError };

/** An executed call's charge: `end` frees its in-flight slot; `refund` undoes the whole charge (the call did not run). */
export interface Charge {
  end(): void;
  refund(): void;
}

type ChargeResult = { readonly kind: 'charged'; readonly charge: Charge } | { readonly kind: 'limited'; readonly error: PosternError };

/** The order limits are reported in when several are reached: the ones waiting cannot cure first. */
const ORDER: readonly LimitName[] = ['per_session', 'per_run', 'per_minute', 'in_flight'];

const pair = (a: string, b: string): string => `${a}\n${b}`;

export class CallLimits {
  /** tool → monotonic times of the charges of the last minute, oldest first. */
  readonly #minute = new Map<string, number[]>();
  readonly #session = new Map<string, number>();
  readonly #run = new Map<string, number>();
  readonly #flight = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  /** Counts rebuilt from the journal's executed calls (its intents), e.g. at daemon start. */
  /** The counts of a journal's executed calls (ActivityJournal.limitHistory, counted in SQL). */
  static fromHistory(clock: Clock, history: LimitHistory): CallLimits {
    const limits = new CallLimits(clock);
    const wallNow = clock.now().getTime();
    const monoNow = clock.monotonicMs();
    for (const c of history.counts) {
      if (c.session_id !== null) bump(limits.#session, pair(c.tool, c.session_id), c.n);
      if (c.run_id !== null) bump(limits.#run, pair(c.tool, c.run_id), c.n);
    }
    for (const r of history.recent) {
      const age = wallNow - Date.parse(r.at);
      // A wall time in the future (a clock stepped back) counts as now: never fewer charges than ran.
      if (Number.isFinite(age) && age < MINUTE_MS) limits.#minuteOf(r.tool).push(monoNow - Math.max(0, age));
    }
    for (const times of limits.#minute.values()) times.sort((a, b) => a - b);
    return limits;
  }

  /** What the daemon does at start: the counts of the activity journal's executed calls. */
  static fromActivity(clock: Clock, activity: { limitHistory(since: string): LimitHistory }): CallLimits {
    return CallLimits.fromHistory(clock, activity.limitHistory(new Date(clock.now().getTime() - MINUTE_MS).toISOString()));
  }

  /** The same from call heads (a journal read page by page; tests). */
  static fromJournal(clock: Clock, heads: Iterable<CallHead>): CallLimits {
    const counts = new Map<string, { tool: string; session_id: string | null; run_id: string | null; n: number }>();
    const recent: { tool: string; at: string }[] = [];
    for (const h of heads) {
      if (h.kind !== 'intent') continue;
      const c = h.call;
      const k = JSON.stringify([c.tool, c.session_id, c.run_id]);
      const e = counts.get(k) ?? { tool: c.tool, session_id: c.session_id, run_id: c.run_id, n: 0 };
      e.n++;
      counts.set(k, e);
      recent.push({ tool: c.tool, at: h.at });
    }
    return CallLimits.fromHistory(clock, { counts: [...counts.values()], recent });
  }

  /** How much of each of the call's limits is used (only the limits it has). */
  usage(s: LimitSubject): LimitUsage[] {
    const used: Record<LimitName, number> = {
      per_minute: this.#recent(s.tool).length,
      per_session: this.#session.get(pair(s.tool, s.sessionId)) ?? 0,
      per_run: s.runId === null ? 0 : (this.#run.get(pair(s.tool, s.runId)) ?? 0),
      in_flight: this.#flight.get(s.tool) ?? 0,
    };
    const out: LimitUsage[] = [];
    for (const limit of ORDER) {
      const max = s.limits[limit];
      if (max === undefined || (limit === 'per_run' && s.runId === null)) continue;
      out.push({ limit, used: used[limit], max });
    }
    return out;
  }

  /** Whether one more call would stay within every limit; counts nothing. */
  check(s: LimitSubject): LimitCheck {
    const usage = this.usage(s);
    const over = usage.find((u) => u.used >= u.max);
    return over === undefined ? { kind: 'within', usage } : { kind: 'limited', error: this.#error(s, over) };
  }

  /** Checks again and, within the limits, counts the call as executed (synchronously: no other call interleaves). */
  charge(s: LimitSubject): ChargeResult {
    const c = this.check(s);
    if (c.kind === 'limited') return c;
    const at = this.clock.monotonicMs();
    const session = pair(s.tool, s.sessionId);
    const run = s.runId === null ? null : pair(s.tool, s.runId);
    this.#minuteOf(s.tool).push(at);
    bump(this.#session, session, 1);
    if (run !== null) bump(this.#run, run, 1);
    bump(this.#flight, s.tool, 1);
    let flying = true;
    const end = (): void => {
      if (!flying) return;
      flying = false;
      bump(this.#flight, s.tool, -1);
    };
    let refunded = false;
    return {
      kind: 'charged',
      charge: {
        end,
        refund: () => {
          if (refunded) return;
          refunded = true;
          end();
          bump(this.#session, session, -1);
          if (run !== null) bump(this.#run, run, -1);
          const times = this.#minuteOf(s.tool);
          const i = times.lastIndexOf(at);
          if (i >= 0) times.splice(i, 1);
        },
      },
    };
  }

  #minuteOf(tool: string): number[] {
    let times = this.#minute.get(tool);
    if (times === undefined) this.#minute.set(tool, (times = []));
    return times;
  }

  /** The charges of the last minute (older ones are dropped). */
  #recent(tool: string): number[] {
    const times = this.#minuteOf(tool);
    const since = this.clock.monotonicMs() - MINUTE_MS;
    let drop = 0;
    while (drop < times.length && (times[drop] as number) <= since) drop++;
    if (drop > 0) times.splice(0, drop);
    return times;
  }

  #error(s: LimitSubject, u: LimitUsage): PosternError {
    const retryAfter = this.#retryAfter(s, u.limit);
    const when = retryAfter === null ? 'waiting will not help' : `retry in ${retryAfter} s`;
    return new PosternError('RATE_LIMITED', `${s.tool}: limit ${u.limit} reached (${describeUsage(u)}); nothing was run — ${when}`, {
      details: { limit: u.limit, used: u.used, max: u.max, retry_after: retryAfter },
    });
  }

  /** Seconds until one more call fits: when the oldest charge of the minute leaves it; 1 for a slot (freed when a running call ends); null for a spent budget. */
  #retryAfter(s: LimitSubject, limit: LimitName): number | null {
    switch (limit) {
      case 'per_minute': {
        const oldest = this.#recent(s.tool)[0];
        if (oldest === undefined) return 1;
        return Math.max(1, Math.ceil((oldest + MINUTE_MS - this.clock.monotonicMs()) / 1000));
      }
      case 'in_flight':
        return 1;
      case 'per_session':
      case 'per_run':
        return null;
    }
  }
}

function bump(m: Map<string, number>, key: string, by: number): void {
  const n = (m.get(key) ?? 0) + by;
  if (n <= 0) m.delete(key);
  else m.set(key, n);
}
