/**
 * Accepting a catalog — the one path by which `postern catalog accept` and
 * `postern ssh trust` make a catalog the one the daemon uses.
 *
 * Invariants:
 * - the diff shown is always against the last AUTHENTICATED accepted
 *   catalog: the copy whose digest the MAC'd record and the vault's mark both
 *   name, or (when the record is lost or rolled back) the copy the vault's
 *   mark alone names. With neither, every target and tool is shown as an
 *   addition that widens authority;
 * - without an authenticated record agreeing with the vault (a first catalog,
 *   or an alarm: record missing, forged, replayed, rolled back) `--yes` cannot
 *   accept: the operator confirms on a terminal, or names the exact file with
 *   `--digest` (its SHA-256, printed in the report);
 * - `pinOnly` (ssh trust) accepts only when the state is authentically
 *   accepted and the candidate is that catalog's text plus this one pin;
 * - the vault's mark (sequence +1, digest), the copy, the record, the
 *   history line and the archive are one home change (change-record.ts),
 *   under the writer lock and the passphrase: a kill leaves all of them or
 *   none. The sequence never repeats.
 */
import {
  acceptanceMac,
  acceptanceRecord,
  checkCatalogCredentials,
  catalogDigest,
  gateReportJson,
  parseCatalog,
  gateRuleFor,
  releaseGate,
  renderGateReport,
  withHostKeyPin,
  type AcceptanceMark,
  type Catalog,
  type CatalogState,
  type GateReport,
  type SignedRecord,
} from '../contracts/index.js';
import { currentCatalogState, readAcceptedCopy, readCatalogFile, stageAcceptance } from './catalog-store.js';
import { PosternError } from '../rules/errors.js';
import type { VaultUnlock } from '../vault/index.js';
import { writeVault, type WriterContext } from './vault-write.js';

/**
 * Who accepts: the CLI (passphrase, a terminal to ask on) or the daemon for an
 * authenticated operator (its unlocked vault, nobody to ask: the operator
 * names the digest they reviewed).
 */
export interface AcceptContext extends WriterContext {
  unlockPassphrase(): Promise<VaultUnlock>;
  /** Asks the operator a yes/no question; absent when nobody can be asked. */
  readonly ask?: ((question: string) => boolean) | undefined;
}

export interface AcceptOpts {
  yes?: boolean;
  force?: boolean;
  json?: boolean;
  /** SHA-256 of the exact file the operator reviewed; confirms without a terminal. */
  digest?: string;
  /** Accept only this exact file; anything else is left pending. */
  expectDigest?: string;
  /** ssh trust: only the authenticated accepted catalog plus this pin may be accepted. */
  pinOnly?: { readonly target: string; readonly fingerprint: string };
}

export type AcceptOutcome =
  | { readonly kind: 'accepted'; readonly sequence: number }
  | { readonly kind: 'already' }
  | { readonly kind: 'declined' }
  /** pinOnly: the catalog differs from the accepted one in more than the pin, or nothing is trusted. */
  | { readonly kind: 'not_pin_only'; readonly reason: string };

interface Baseline {
  readonly catalog: Catalog;
  readonly text: string;
  readonly digest: string;
  /** How it is known to be the last accepted one. */
  readonly by: 'record' | 'vault';
}

type Inner = AcceptOutcome | { readonly kind: 'write'; readonly text: string; readonly signed: SignedRecord; readonly tools: number };

function gateError(report: GateReport): PosternError {
  const n = report.failures.length + report.historicalFailures.length;
  return new PosternError('RELEASE_GATE_FAILED', `the release gate failed (${n} problem${n === 1 ? '' : 's'}); see the report above`);
}

/** The last accepted catalog this vault can vouch for, if any. */
async function baselineFor(ctx: AcceptContext, state: CatalogState, mark: AcceptanceMark | null): Promise<Baseline | undefined> {
  const fromCopy = async (digest: string, by: Baseline['by']): Promise<Baseline | undefined> => {
    const text = await readAcceptedCopy(ctx.paths, digest);
    return text === undefined ? undefined : { catalog: parseCatalog(text, ctx.paths.acceptedCatalog), text, digest, by };
  };
  if (state.state === 'pending') return fromCopy(state.acceptedDigest, 'record');
  if (state.state === 'alarm' && mark !== null) return fromCopy(mark.digest, 'vault');
  return undefined;
}

function describeBaseline(ctx: AcceptContext, state: CatalogState, baseline: Baseline | undefined, mark: AcceptanceMark | null): void {
  if (state.state === 'alarm') {
    ctx.out(`ALARM: ${state.message}.`);
    ctx.out('Something other than `postern catalog accept` changed the acceptance files. Review every change below before accepting.');
  }
  if (baseline !== undefined) {
    const n = baseline.by === 'record' ? `#${state.state === 'pending' ? state.sequence : '?'}` : `#${mark?.sequence ?? '?'} (named by the vault)`;
    ctx.out(`Changes from the accepted catalog ${n}, sha256 ${baseline.digest.slice(0, 16)}…:`);
  } else if (state.state === 'pending') {
    ctx.out(`ALARM: ${ctx.paths.acceptedCatalog} does not match the accepted digest: every target and tool below is shown as an addition that widens authority.`);
  } else if (state.state === 'alarm') {
    ctx.out('No accepted catalog can be trusted: every target and tool below is shown as an addition that widens authority.');
  } else {
    ctx.out('First catalog of this home: every target and tool below is an addition that widens authority.');
  }
}

/** Did the operator see and confirm this exact file? Throws when confirmation is impossible. */
function confirmed(ctx: AcceptContext, o: AcceptOpts, digest: string, reviewedDiff: boolean): boolean {
  if (o.pinOnly !== undefined) return true; // ssh trust: the fingerprint was confirmed, and nothing else changed
  if (o.digest !== undefined) {
    if (o.digest.trim().toLowerCase() !== digest) {
      throw new PosternError('CATALOG_PENDING', `${ctx.paths.catalog} is not the file you reviewed (sha256 ${digest}); nothing was accepted`);
    }
    return true;
  }
  if (o.yes === true && reviewedDiff) return true;
  if (ctx.ask !== undefined) return ctx.ask(`Accept catalog ${digest.slice(0, 16)}…?`);
  if (o.yes === true) {
    throw new PosternError('USAGE', `nothing trusted precedes this catalog, so --yes cannot accept it unseen: confirm on a terminal, or pass --digest ${digest} after reviewing the report above`);
  }
  // --yes only vouches for a diff against a trusted catalog: without one, name the flag that works.
  throw new PosternError('USAGE', reviewedDiff ? 'no terminal to confirm: pass --yes (or --digest SHA256 of the reviewed file)' : `no terminal to confirm, and nothing trusted precedes this catalog: pass --digest ${digest} after reviewing the report above`);
}

/**
 * What can be refused without the passphrase, before asking for it: no
 * catalog, a catalog that does not parse, and a release gate that fails
 * against the stored accepted copy. Only a refusal is decided here; the
 * accepting path checks again against the authenticated copy.
 */
async function precheck(ctx: AcceptContext, o: AcceptOpts): Promise<void> {
  if (o.pinOnly !== undefined) return;
  const file = await readCatalogFile(ctx.paths.catalog);
  if (file === undefined) throw new PosternError('CATALOG_NOT_FOUND', `no catalog at ${ctx.paths.catalog}`);
  const cand = parseCatalog(file.text, ctx.paths.catalog);
  if (o.force === true) return;
  const stored = await readCatalogFile(ctx.paths.acceptedCatalog);
  if (stored === undefined) return;
  let old: Catalog;
  try {
    old = parseCatalog(stored.text, ctx.paths.acceptedCatalog);
  } catch {
    return; // the authenticated path reports what is wrong with it
  }
  const report = releaseGate(old, cand);
  // Only schema failures are decided early. A change of target or authority may come from a misspelt or
  // mis-kinded credential, which only the vault can tell (unknown credential, kind mismatch — not widening):
  // those are left to the authenticated path, after the passphrase.
  const failing = report.changes.filter((c) => gateRuleFor(c) !== undefined);
  if (report.ok || failing.length === 0 || failing.some((c) => c.aspect !== 'input' && c.aspect !== 'output')) return;
  ctx.out(o.json === true ? JSON.stringify(gateReportJson(report), null, 2) : renderGateReport(report));
  if (o.json !== true) ctx.out('(checked against the stored accepted catalog, before asking for the passphrase)');
  throw gateError(report);
}

/**
 * Adopts catalog.yaml: shows the classified diff against the last
 * authenticated accepted catalog, runs the release gate, asks, then records
 * the acceptance in the vault and in the MAC'd record and history.
 */
export async function acceptCatalog(ctx: AcceptContext, o: AcceptOpts): Promise<AcceptOutcome> {
  await precheck(ctx, o);
  const pass = await ctx.unlockPassphrase();
  let inner: Inner;
  try {
    ({ result: inner } = await writeVault<Inner>(
      ctx,
      pass,
      async (vault) => {
        const key = vault.deriveKey('catalog-mac');
        const mark = vault.acceptedCatalog;
        const creds = new Set(vault.list().map((m) => m.name));
        const file = await readCatalogFile(ctx.paths.catalog);
        if (file === undefined) throw new PosternError('CATALOG_NOT_FOUND', `no catalog at ${ctx.paths.catalog}`);
        const cand = { ...file, catalog: parseCatalog(file.text, ctx.paths.catalog, creds) };
        checkCatalogCredentials(cand.catalog, vault.list());
        if (o.expectDigest !== undefined && cand.digest !== o.expectDigest) {
          throw new PosternError('CATALOG_PENDING', `${ctx.paths.catalog} changed meanwhile; review it with \`postern catalog accept\``);
        }
        const { state } = await currentCatalogState(ctx.paths, key, mark);
        if (state.state === 'accepted') {
          ctx.out(`catalog ${cand.digest.slice(0, 16)}… is already accepted (#${state.sequence})`);
          return { kind: 'already' };
        }
        const baseline = await baselineFor(ctx, state, mark);
        if (o.pinOnly !== undefined) {
          if (state.state !== 'pending' || baseline === undefined) {
            return { kind: 'not_pin_only', reason: state.state === 'alarm' ? `ALARM: ${state.message}` : 'there is no authenticated accepted catalog to add the pin to' };
          }
          if (catalogDigest(withHostKeyPin(baseline.text, o.pinOnly.target, o.pinOnly.fingerprint)) !== cand.digest) {
            return { kind: 'not_pin_only', reason: 'catalog.yaml has other unaccepted edits besides this pin' };
          }
        }
        describeBaseline(ctx, state, baseline, mark);
        const report = releaseGate(baseline?.catalog, cand.catalog);
        ctx.out(o.json === true ? JSON.stringify(gateReportJson(report), null, 2) : renderGateReport(report));
        ctx.out(`candidate: ${ctx.paths.catalog}, sha256 ${cand.digest}`);
        if (!report.ok && o.force !== true) throw gateError(report);
        if (!confirmed(ctx, o, cand.digest, state.state === 'pending' && baseline?.by === 'record')) {
          ctx.out('nothing accepted');
          return { kind: 'declined' };
        }
        const sequence = (mark?.sequence ?? 0) + 1;
        const previous = mark?.digest ?? (state.state === 'pending' ? state.acceptedDigest : null);
        vault.recordAcceptedCatalog({ sequence, digest: cand.digest });
        const record = acceptanceRecord({ sequence, digest: cand.digest, acceptedAt: ctx.clock.now(), previousDigest: previous, forced: !report.ok, changes: report.changes.length });
        return { kind: 'write', text: cand.text, signed: { record, mac: acceptanceMac(key, record) }, tools: cand.catalog.tools.size };
      },
      async (r, _saved, change) => {
        // One change with the vault's new mark: the copy, the record, the history line and the archive.
        if (r.kind === 'write') await stageAcceptance(ctx.paths, change, r.text, r.signed);
      },
      'catalog accept',
    ));
  } finally {
    if (pass instanceof Uint8Array) pass.fill(0);
  }
  if (inner.kind !== 'write') return inner;
  const seq = inner.signed.record.format === 'postern.catalog-acceptance/2' ? inner.signed.record.sequence : 0;
  ctx.out(`accepted catalog ${inner.signed.record.digest.slice(0, 16)}… as acceptance #${seq} (${inner.tools} tools)`);
  return { kind: 'accepted', sequence: seq };
}
