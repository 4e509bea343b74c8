/**
 * What one call exposed: every vault secret the redactor actually replaced
 * (or found) in the call's arguments, result or errors, by credential and
 * value fingerprint — the facts `postern audit find-secret` answers from.
 * A marker that was already in the text is never a hit (the redactor keeps
 * it as it is), so an agent cannot make a call look like a leak by typing one.
 */
import type { Exposure, ExposurePlace } from '../../journal/index.js';
import type { Redactor, SecretHit } from '../../redaction/index.js';

/** At most this many distinct (credential, value) pairs per call; more is not a more useful answer. */
const MAX_EXPOSURES = 32;

export class ExposureLog {
  readonly #found = new Map<string, { credential: string; fingerprint: string | null; in: Set<ExposurePlace> }>();

  /** `r`, recording what it redacts as found in `place`. */
  redactor(r: Redactor, place: ExposurePlace): Redactor {
    return r.track((hit) => this.#add(hit, place));
  }

  #add(hit: SecretHit, place: ExposurePlace): void {
    const id = `${hit.name}\u0000${hit.fingerprint ?? ''}`;
    let e = this.#found.get(id);
    if (e === undefined) {
      if (this.#found.size >= MAX_EXPOSURES) return;
      e = { credential: hit.name, fingerprint: hit.fingerprint, in: new Set() };
      this.#found.set(id, e);
    }
    e.in.add(place);
  }

  /** The exposures so far, in a stable order; empty when nothing was redacted. */
  list(): Exposure[] {
    const order: readonly ExposurePlace[] = ['arguments', 'result', 'error'];
    return [...this.#found.values()].map((e) => ({ credential: e.credential, fingerprint: e.fingerprint, in: order.filter((p) => e.in.has(p)) }));
  }
}
