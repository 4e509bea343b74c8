/**
 * Checks an accepted or candidate catalog against the vault's credential
 * metadata with the one credential-fit rule (src/rules/credential-fit.ts):
 * every target whose credential is in the vault must find it of the kind, and
 * sent under the name, its `auth` declares. Unknown names are reported by
 * parseCatalog (CATALOG_INVALID); a misfit is CREDENTIAL_KIND_MISMATCH, naming
 * every target that does not fit. Pure: metadata in, verdict out.
 */
import { credentialFit, credentialMisfitError, type CredentialFacts, type CredentialFit } from '../../rules/credential-fit.js';
import { PosternError } from '../../rules/errors.js';
import type { Catalog } from '../types.js';

export interface CredentialMisfit {
  readonly target: string;
  readonly credential: CredentialFacts;
  readonly fit: Extract<CredentialFit, { fits: false }>;
}

export function credentialMisfits(catalog: Pick<Catalog, 'targets'>, credentials: readonly CredentialFacts[]): CredentialMisfit[] {
  const byName = new Map(credentials.map((c) => [c.name, c] as const));
  const out: CredentialMisfit[] = [];
  for (const [name, target] of [...catalog.targets.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const facts = byName.get(target.credential);
    if (facts === undefined) continue;
    const fit = credentialFit(target.kind === 'http' ? { kind: 'http', auth: target.auth } : { kind: 'ssh' }, facts);
    if (!fit.fits) out.push({ target: name, credential: facts, fit });
  }
  return out;
}

/** Throws CREDENTIAL_KIND_MISMATCH when any target's credential does not fit. */
export function checkCatalogCredentials(catalog: Pick<Catalog, 'targets' | 'fileName'>, credentials: readonly CredentialFacts[]): void {
  const misfits = credentialMisfits(catalog, credentials);
  const [first, ...rest] = misfits;
  if (first === undefined) return;
  if (rest.length === 0) throw credentialMisfitError(first.credential, first.fit, first.target);
  const lines = misfits.map((m) => `target ${m.target}: the credential "${m.credential.name}" ${m.fit.problem}`);
  throw new PosternError('CREDENTIAL_KIND_MISMATCH', `${catalog.fileName}: ${misfits.length} targets do not fit their credentials: ${lines.join('; ')}`, {
    details: { targets: misfits.map((m) => m.target), credentials: misfits.map((m) => m.credential.name) },
    sideEffectStarted: false,
  });
}
