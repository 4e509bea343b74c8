/**
 * What `catalog.yaml` would change if accepted, compared with the catalog the
 * daemon uses (CatalogPendingView): the classified changes, whether any widens
 * authority and how, and the release gate. Read-only: accepting stays the
 * operator's act (`postern catalog accept`).
 *
 * Invariants: a file equal to the catalog in use is not pending (null); a file
 * that does not parse is pending with `invalid` set and no changes; with no
 * trusted catalog in use every tool is compared with nothing (all additions
 * that widen authority); strings are the catalog's own words, to be sanitized
 * by whoever shows them.
 */
import { parseCatalog, releaseGate, type Catalog } from '../../contracts/index.js';
import { readCatalogFile } from '../../home/catalog-store.js';
import { isPosternError } from '../../rules/errors.js';
import type { CatalogPendingView } from '../../protocol/operator/index.js';

export async function pendingCatalog(path: string, inUse: { readonly catalog: Catalog; readonly digest: string; readonly trusted: boolean }, credentials: ReadonlySet<string>): Promise<CatalogPendingView | null> {
  const file = await readCatalogFile(path);
  if (file === undefined || file.digest === inUse.digest) return null;
  const base = { digest: file.digest, baseline_digest: inUse.trusted ? inUse.digest : null, alarm: null };
  let candidate: Catalog;
  try {
    candidate = parseCatalog(file.text, path, credentials);
  } catch (e) {
    const why = isPosternError(e) ? e.message : 'the catalog does not parse';
    return { ...base, tools: 0, changes: [], widening: false, widening_reasons: [], gate: { ok: false, failures: [why] }, invalid: why };
  }
  const report = releaseGate(inUse.trusted ? inUse.catalog : undefined, candidate);
  const changes = report.changes.map((c) => ({ tool: c.tool, from: c.from ?? null, to: c.to ?? null, class: c.class, aspect: c.aspect, reasons: c.reasons.map((r) => r.text) }));
  const widening = changes.filter((c) => c.class === 'authority_widening');
  return {
    ...base,
    tools: candidate.tools.size,
    changes,
    widening: widening.length > 0,
    widening_reasons: widening.flatMap((c) => c.reasons.map((r) => `${c.tool}: ${r}`)),
    gate: { ok: report.ok, failures: report.failures.map((f) => f.message) },
    invalid: null,
  };
}
