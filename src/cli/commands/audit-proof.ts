/**
 * The proof side of `postern audit` (docs/audit.md, "Signed checkpoints",
 * "Bundles", "Prune"):
 * - `audit key`: the checkpoint public key and its fingerprint (passphrase),
 *   for the operator to note somewhere the agent cannot write;
 * - the `checkpoint:` finding of `audit verify`;
 * - `audit export --bundle FILE [filters]`: a self-contained, verifiable bundle
 *   (no passphrase: everything in it is already signed or chained);
 * - `audit verify --bundle FILE [--key FP]`: offline, needs no home at all;
 * - `audit prune --before DATE [--yes]`: removes old entries (passphrase; refuses
 *   while a daemon runs), keeping the chains verifiable and what idempotency
 *   retention still needs; journaled and checkpointed.
 */
import { openNewPrivateFile } from '../new-file.js';
import { closeSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import type { Command } from 'commander';
import { loadConfig } from '../../daemon/services/config.js';
import { replayWindowOpen } from '../../daemon/pipeline/stages/key/idempotency.js';
import { readAcceptedText } from '../../home/catalog-store.js';
import { buildBundle } from '../../journal/bundle/build.js';
import { bundleBytes } from '../../journal/bundle/format.js';
import { verifyBundle } from '../../journal/bundle/verify.js';
import { readCheckpoints } from '../../journal/checkpoint/file.js';
import { describeCheckpointInspection, inspectCheckpoints, type CheckpointInspection } from '../../journal/checkpoint/inspect.js';
import { walkTrust } from '../../journal/checkpoint/record.js';
import { keyFingerprint, publicKeyOf } from '../../journal/checkpoint/signature.js';
import type { ChainCut, PrunePlan } from '../../journal/index.js';
import { PosternError } from '../../rules/errors.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { activityFilter, noJournal, openAudit, parseLimit, parseTime, withJournals, type ActivityOpts } from '../audit-options.js';
import type { CliContext } from '../context.js';
import { contextFor } from '../context.js';
import { canPrompt, confirm } from '../tty.js';
import { vaultFacts, withAnchoredJournals, type VaultFacts } from './anchor.js';

// ---------------------------------------------------------------------------
// Checkpoints in `audit verify`

/** The checkpoint finding: against `key` when named, and the vault's own key with --unlock. */
export function checkpointFinding(ctx: CliContext, opts: { key?: string; unlocked?: VaultFacts }): { ok: boolean; line: string; inspection: CheckpointInspection; json: Record<string, unknown> } {
  const vaultKey = opts.unlocked === undefined ? undefined : publicKeyOf(opts.unlocked.checkpointSeed);
  const inspection = inspectCheckpoints(ctx.paths.journalDir, ctx.paths.checkpoints, {
    ...(opts.key === undefined ? {} : { root: opts.key }),
    ...(vaultKey === undefined ? {} : { vaultKey }),
  });
  const d = describeCheckpointInspection(inspection, opts.key !== undefined);
  const w = inspection.walk;
  const json = {
    ok: d.ok,
    line: d.line,
    kind: inspection.kind,
    ...(inspection.kind === 'judged' ? { checkpoint: inspection.checkpoint.record, verdict: inspection.verdict, pinned: inspection.pinned } : {}),
    keys: w.keys.map(keyFingerprint),
    lines: { accepted: w.accepted.length, malformed: w.malformed, bad_signature: w.badSignature, untrusted: w.untrusted },
  };
  return { ...d, inspection, json };
}

// ---------------------------------------------------------------------------
// Bundles

function writeNew(file: string, bytes: Buffer): void {
  const fd = openNewPrivateFile(file, 'no bundle written to');
  try {
    for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
    closeSync(fd);
  } catch (e) {
    try {
      closeSync(fd);
    } catch {
      // already closed
    }
    unlinkSync(file);
    throw new PosternError('FILE_IO', `writing ${clean(file, 200)} failed (${(e as NodeJS.ErrnoException).code ?? 'error'}); the partial file was removed`);
  }
}

/** `audit export --bundle FILE [filters]`. */
export async function exportBundle(ctx: CliContext, file: string, o: ActivityOpts): Promise<void> {
  const limit = parseLimit(o.limit);
  const now = ctx.clock.now();
  const since = parseTime('--since', o.since, now);
  const until = parseTime('--until', o.until, now);
  const j = openAudit(ctx);
  if (j === null) throw new PosternError('JOURNAL_UNAVAILABLE', `${noJournal(ctx)}; no bundle written`);
  const walk = walkTrust(readCheckpoints(ctx.paths.checkpoints));
  if (walk.accepted.length === 0) throw new PosternError('JOURNAL_UNAVAILABLE', 'no signed checkpoint yet (the daemon writes one when it starts and stops): nothing can be proven; no bundle written');
  // The accepted texts (copy or archive) are read before the journals are opened for the build (the build is synchronous).
  const texts = new Map<string, string>();
  for (const d of new Set(walk.accepted.map((c) => c.record.catalog_digest))) {
    const t = await readAcceptedText(ctx.paths, d);
    if (t !== undefined) texts.set(d, t);
  }
  const r = withJournals(j, (jj) =>
    buildBundle({ journals: jj, calls: jj.activity.listCalls(activityFilter(jj, o, { since, until, limit })), checkpoints: walk.accepted, catalogText: (d) => texts.get(d) }),
  );
  if (r.bundle.calls.length === 0 && r.uncovered.length === 0) {
    ctx.out(`no calls match; ${clean(file, 200)} was not created`);
    return;
  }
  if (r.bundle.calls.length === 0) {
    throw new PosternError('JOURNAL_UNAVAILABLE', `the ${r.uncovered.length} matching calls were journaled after the last signed checkpoint: nothing can be proven yet: sign one now with \`postern audit checkpoint\` (one is also written periodically and when the daemon stops); no bundle written`);
  }
  writeNew(file, bundleBytes(r.bundle));
  const entries = r.bundle.segments.reduce((n, s) => n + s.rows.length, 0);
  const key = keyFingerprint(r.bundle.checkpoints.at(-1)!.record.public_key);
  ctx.out(`bundled ${r.bundle.calls.length} calls (${entries} entries, ${r.bundle.checkpoints.length} checkpoints, key ${key}) to ${clean(file, 200)}`);
  if (r.uncovered.length > 0) ctx.out(`left out ${r.uncovered.length} calls journaled after the last signed checkpoint`);
  if (r.sessionEntriesLeftOut > 0) ctx.out(`left out ${r.sessionEntriesLeftOut} sessions journal entries of those sessions journaled after the last signed checkpoint`);
  if (r.outcomesLeftOut > 0) ctx.out(`${r.outcomesLeftOut} outcomes are past the last signed checkpoint: those calls are bundled without them`);
}

/** `audit verify --bundle FILE [--key FP] [--json]`: offline. */
export function verifyBundleFile(ctx: CliContext, file: string, o: { key?: string; json?: boolean }): void {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (e) {
    throw new PosternError('FILE_IO', `cannot read ${clean(file, 200)}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  const p = verifyBundle(bytes, o.key === undefined ? {} : { key: o.key });
  if (o.json === true) {
    ctx.out(JSON.stringify({ ok: true, ...p }, null, 2));
    return;
  }
  const last = p.checkpoints.at(-1);
  ctx.out(`bundle ok: ${p.calls} calls (${p.calls_with_outcome} with their outcome) in ${p.entries} entries, seq ${p.first_seq}–${p.last_seq} of journal ${clean(p.journal_id, 128)}`);
  ctx.out(`  each entry hashes, through the entries after it, to a head signed in ${p.checkpoints.length} checkpoint(s), the last #${last?.counter ?? 0} (${last?.reason ?? '-'}) at ${clean(last?.at ?? '-', 64)}`);
  ctx.out(`  signed by ${p.keys.join(' → ')}${p.pinned ? ' (the key you named)' : ' — NOT pinned: compare it with the fingerprint the operator noted (`postern audit key`), or pass --key'}`);
  ctx.out(`  catalogs: ${p.catalogs} referenced, ${p.catalog_texts} with their text`);
  ctx.out(
    p.sessions === null
      ? '  sessions: none (a postern.audit-bundle/1 carries no sessions journal entries)'
      : `  sessions: ${p.sessions.sessions} the calls ran in, ${p.sessions.session_entries} of their entries, in ${p.sessions.entries} sessions journal entries hashed to signed heads${p.sessions.calls_without_session > 0 ? `; ${p.sessions.calls_without_session} calls ran in a session the bundle does not hold` : ''}`,
  );
  ctx.out('  it proves these entries were in the journal when it was checkpointed; not that no other call matched the filter');
}

// ---------------------------------------------------------------------------
// Prune

function cutLine(name: string, c: ChainCut): string {
  const why: Record<ChainCut['stoppedBy'], string> = {
    date: 'the cut-off',
    last_entry: 'the last entry (always kept)',
    open_call: `a call still open (intent seq ${c.heldAt ?? '-'})`,
    retention: `a key still inside the idempotency retention window (intent seq ${c.heldAt ?? '-'})`,
  };
  return `${name}: ${c.entries} entries up to seq ${c.cut} (stops at ${why[c.stoppedBy]})`;
}

async function prune(ctx: CliContext, o: { before?: string; yes?: boolean; json?: boolean }): Promise<void> {
  if (o.before === undefined) throw new PosternError('USAGE', 'give --before DATE (an ISO 8601 time, or an age such as 90d)');
  const before = parseTime('--before', o.before, ctx.clock.now())!;
  if (o.yes !== true && !canPrompt()) throw new PosternError('USAGE', 'no terminal to confirm: pass --yes');
  const config = await loadConfig(ctx.paths.config);
  await withAnchoredJournals(ctx, (opened) => {
    const retention = { now: ctx.clock.now(), days: config.idempotency_retention_days };
    const plan: PrunePlan = opened.journals.prunePlan(before, (c) => c.state === 'completed' && replayWindowOpen(c.completed_at, retention));
    const total = plan.activity.entries + plan.sessions.entries;
    if (total === 0) {
      ctx.out(`nothing to prune before ${before}: ${cutLine('activity', plan.activity)}; ${cutLine('sessions', plan.sessions)}`);
      return;
    }
    if (o.yes !== true && !confirm(`Remove ${plan.activity.entries} activity and ${plan.sessions.entries} sessions entries journaled before ${before}? They cannot be shown or exported afterwards.`)) {
      ctx.out('nothing changed');
      return;
    }
    // The signed prune checkpoint is the commit point (docs/decisions.md, "The last multi-file commands"):
    // it names the bases the prune leaves; a kill after it is finished by the next open.
    const signed = opened.journals.pruneBases(plan);
    opened.keeper.checkpointNow('prune', before, signed);
    const bases = opened.journals.prune(plan, signed);
    opened.journals.sessions.event(null, 'journal_pruned', {
      before,
      by: 'operator',
      retention_days: config.idempotency_retention_days,
      activity: { removed: plan.activity.entries, base_seq: bases.activity.seq, stopped_by: plan.activity.stoppedBy, held_at: plan.activity.heldAt },
      sessions: { removed: plan.sessions.entries, base_seq: bases.sessions.seq, stopped_by: plan.sessions.stoppedBy },
    });
    const result = { before, activity: { ...plan.activity, base: bases.activity }, sessions: { ...plan.sessions, base: bases.sessions } };
    if (o.json === true) ctx.out(JSON.stringify(result, null, 2));
    else {
      ctx.out(`pruned before ${before}:`);
      ctx.out(`  ${cutLine('activity', plan.activity)}`);
      ctx.out(`  ${cutLine('sessions', plan.sessions)}`);
      ctx.out('  the chains now start there; a signed checkpoint records it (journaled as journal_pruned)');
    }
  });
}

// ---------------------------------------------------------------------------
// Commands

export function registerAuditProof(audit: Command): void {
  audit
    .command('key')
    .description("the public key that signs the journal checkpoints, and its fingerprint: note it somewhere the agent cannot write (passphrase)")
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const f = await vaultFacts(ctx);
      try {
        const pk = publicKeyOf(f.checkpointSeed);
        if (o.json === true) ctx.out(JSON.stringify({ algorithm: 'ed25519', public_key: pk, fingerprint: keyFingerprint(pk) }, null, 2));
        else {
          ctx.out(`checkpoint key (ed25519): ${keyFingerprint(pk)}`);
          ctx.out(`public key: ${pk}`);
        }
      } finally {
        f.wipe();
      }
    });

  audit
    .command('prune')
    .description('remove entries journaled before DATE, keeping both chains verifiable and every key idempotency retention still needs (passphrase; not while the daemon runs)')
    .option('--before <time>', 'remove entries journaled before this ISO 8601 time or age (90d)')
    .option('-y, --yes', 'do not ask for confirmation')
    .option('--json', 'print JSON')
    .action(async (o: { before?: string; yes?: boolean; json?: boolean }, cmd: Command) => {
      await prune(contextFor(cmd), o);
    });
}
