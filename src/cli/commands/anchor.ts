/**
 * `postern anchor status|new-journal|restore-journal|release-key|close-gap|accept-vault`:
 * the operator's view of the journal anchor (docs/audit.md) and the explicit
 * ways past a refusal.
 *
 * - `status` judges the journals and the vault against the anchor, with the
 *   passphrase (the MAC is checked); it changes nothing.
 * - `new-journal` starts a new journal when the old one is lost, emptied,
 *   replaced or rolled back: the old files are moved aside (kept), the new
 *   journal gets a new id and an anchor, and its first entry records the
 *   replacement and what the old anchor said. Keys completed in the old
 *   journal are no longer known to the new one — the prompt says so.
 * - `restore-journal` puts back an older copy of the journal (journal/anchor/
 *   restore.ts), journaling the gap; `release-key` and `close-gap` are the
 *   operator's decisions on the keys the gap holds (journal/gap.ts).
 * - `accept-vault` accepts a vault generation older than the anchor's (an
 *   older vault.pvlt deliberately restored); journaled.
 * The writers need the passphrase and refuse while a daemon runs (they take
 * the daemon's lock).
 */
import type { Command } from 'commander';
import { examples } from '../help.js';
import { sha256Hex } from '../../contracts/index.js';
import { takeDaemonLock } from '../../home/daemon-lock.js';
import { anchoredJournal, writeVault } from '../../home/vault-write.js';
import { checkpointsShortOfVault } from '../../journal/checkpoint/vault-mark.js';
import { inspectClaims } from '../../journal/anchor/verified.js';
import { describeProblem, inspectAnchor, openAnchoredJournals, prepareNewJournal, type AnchorContext, type AnchoredJournals, type AnchorInspection, type NewJournalPlan, type RecordedJournal } from '../../journal/anchor/index.js';
import { PosternError } from '../../rules/errors.js';
import { JournalGap, type GapRecord } from '../../journal/gap.js';
import { gapForNewJournal, prepareRestore, type RestorePlan } from '../../journal/anchor/restore.js';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { openVault } from '../../vault/index.js';
import { contextFor, type CliContext } from '../context.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { canPrompt, confirm } from '../tty.js';

/** What the anchor writers need from the vault; `wipe` zeroes both key copies. */
export interface VaultFacts {
  readonly key: Uint8Array;
  /** The journal-checkpoint seed (copy). */
  readonly checkpointSeed: Uint8Array;
  /** The key the home's MAC'd records are written under (copy): doctor verifies the agent allow list with it. */
  readonly catalogMac: Uint8Array;
  readonly generation: number;
  readonly catalogDigest: string;
  /** The journal the vault recorded (vault/FORMAT.md §4, `journal`), or null. */
  readonly journal: RecordedJournal | null;
  /** What restores decided (FORMAT.md §4, `journal_gap`); undefined when never recorded. */
  readonly journalGap: GapRecord | null | undefined;
  wipe(): void;
}

/** The vault facts the anchor needs: its journal-anchor key (copy), the checkpoint seed (copy), generation, and the catalog digest in force. */
export async function vaultFacts(ctx: CliContext, given?: Uint8Array): Promise<VaultFacts> {
  const pass = given ?? (await ctx.unlockPassphrase());
  const vault = await openVault(ctx.paths.vault, pass, ctx.vault).finally(() => {
    if (given === undefined) pass.fill(0);
  });
  try {
    const key = Uint8Array.from(vault.deriveKey('journal-anchor'));
    const checkpointSeed = Uint8Array.from(vault.deriveKey('journal-checkpoint'));
    const catalogMac = Uint8Array.from(vault.deriveKey('catalog-mac'));
    // The catalog in force is the one the vault's own mark names (written under the passphrase).
    return {
      key,
      checkpointSeed,
      catalogMac,
      generation: vault.generation,
      catalogDigest: vault.acceptedCatalog?.digest ?? sha256Hex(''),
      journal: vault.journal,
      journalGap: vault.journalGap,
      wipe() {
        key.fill(0);
        checkpointSeed.fill(0);
        catalogMac.fill(0);
      },
    };
  } finally {
    vault.lock();
  }
}


export function anchorContext(ctx: CliContext, f: VaultFacts): AnchorContext {
  return {
    journalDir: ctx.paths.journalDir,
    anchorPath: ctx.paths.anchor,
    key: f.key,
    vaultGeneration: f.generation,
    catalogDigest: f.catalogDigest,
    clock: ctx.clock,
    log: (l) => process.stderr.write(`postern: ${l}\n`),
    checkpoints: { path: ctx.paths.checkpoints, seed: f.checkpointSeed },
    vaultJournal: f.journal,
  };
}

/**
 * After the operator started a journal or accepted a vault: the vault records
 * the journal the anchor now names (vault/FORMAT.md §4, `journal`), so the
 * daemon's start compares the two. The caller holds the daemon lock, so the
 * anchor does not follow this save's generation; the daemon records it.
 */
async function recordAnchoredJournal(ctx: CliContext, pass: Uint8Array, gap: GapRecord | null): Promise<void> {
  await writeVault(ctx, pass, (v) => {
    const named = anchoredJournal(ctx.paths.anchor, v.deriveKey('journal-anchor'));
    if (named !== undefined) v.recordJournal(named);
    // An older vault carries an older gap record: it now records the gap the anchored journal holds.
    v.recordJournalGap(gap);
  });
}

/**
 * Puts a journal built beside the home (`plan.stagedDir`) in place, as one
 * home change with the vault's save: the old journal directory moved aside
 * (kept), the new one moved in, its anchor and signed checkpoint, and the
 * vault's record of it (vault/FORMAT.md §4). A kill before the change leaves
 * the home as it was; the next opener finishes a change it finds.
 */
async function switchJournal(ctx: CliContext, pass: Uint8Array, plan: NewJournalPlan, command: string, gap?: GapRecord | null): Promise<void> {
  await writeVault(
    ctx,
    pass,
    (v) => {
      v.replaceJournalRecord(plan.mark);
      // The gap the new journal holds, where the next restore finds it (journal/gap.ts).
      if (gap !== undefined) v.recordJournalGap(gap);
    },
    async (_r, saved, change) => {
      if (saved === null) throw new PosternError('INTERNAL', 'the vault did not save the new journal it records');
      const sealed = plan.seal(saved.generation);
      if (plan.movedTo !== null) change.rename(ctx.paths.journalDir, plan.movedTo);
      change.rename(plan.stagedDir, ctx.paths.journalDir);
      change.write(ctx.paths.anchor, sealed.anchor);
      if (sealed.checkpoint !== null) change.append(ctx.paths.checkpoints, sealed.checkpoint);
      return Promise.resolve();
    },
    command,
    { journalMark: plan.mark },
  );
}

/**
 * A journal staged by a run killed before its change record was written is
 * read by no one: removed before a new one is staged (under the daemon lock,
 * and only when no change record is pending, which could still name one).
 */
function removeStaleStaging(ctx: CliContext): void {
  if (existsSync(ctx.paths.changeRecord)) return;
  for (const name of readdirSync(ctx.paths.home)) {
    if (/^journal\.staged-[0-9a-f-]{36}$/.test(name)) rmSync(join(ctx.paths.home, name), { recursive: true, force: true });
  }
}

/**
 * `new-journal` and `restore-journal`: the daemon lock (with a daemon
 * running nothing is asked: DAEMON_RUNNING), the confirmation, the
 * passphrase, the plan `build` makes beside the home, then `switchJournal`.
 * Null when the operator said no.
 */
async function replaceJournal<P extends NewJournalPlan & { readonly gapRecord: GapRecord | null }>(ctx: CliContext, o: { yes?: boolean }, question: string, build: (a: AnchorContext, f: VaultFacts) => P, command: string): Promise<P | null> {
  if (o.yes !== true && !canPrompt()) throw new PosternError('USAGE', 'no terminal to confirm: pass --yes');
  const lock = await takeDaemonLock(ctx.paths);
  let f: VaultFacts | undefined;
  let pass: Uint8Array | undefined;
  try {
    if (o.yes !== true && !confirm(question)) {
      ctx.out('nothing changed');
      return null;
    }
    pass = await ctx.unlockPassphrase();
    f = await vaultFacts(ctx, pass);
    removeStaleStaging(ctx);
    const plan = build(anchorContext(ctx, f), f);
    await switchJournal(ctx, pass, plan, command, plan.gapRecord);
    return plan;
  } finally {
    f?.wipe();
    pass?.fill(0);
    await lock.release();
  }
}

/**
 * An operator command on the anchored journals while no daemon runs: the
 * daemon lock, the passphrase, the journals opened against their anchor
 * (checkpointed when closed), then everything released and zeroed.
 */
export async function withAnchoredJournals<T>(ctx: CliContext, fn: (opened: AnchoredJournals) => T | Promise<T>): Promise<T> {
  // The daemon lock first: with a daemon running, nothing is asked (DAEMON_RUNNING).
  const lock = await takeDaemonLock(ctx.paths);
  let f: VaultFacts | undefined;
  try {
    f = await vaultFacts(ctx);
    const opened = openAnchoredJournals(anchorContext(ctx, f));
    try {
      return await fn(opened);
    } finally {
      opened.close();
    }
  } finally {
    f?.wipe();
    await lock.release();
  }
}

/**
 * The operator's decision on a restored journal's gap (journal/gap.ts),
 * journaled in the sessions journal and then kept in the vault (`journal_gap`),
 * where the next restore finds it: the daemon lock (not while a daemon runs:
 * it reads the gap at start), the passphrase, the anchored journals. A vault
 * whose record differs from the journal's (a run killed between the two) is
 * brought in line even when there is nothing to decide.
 */
async function journalGapDecision(
  ctx: CliContext,
  decide: (gap: JournalGap) => { type: 'journal_key_released' | 'journal_gap_closed'; data: Record<string, unknown> } | null,
  say: { done: string; nothing: string },
): Promise<void> {
  const lock = await takeDaemonLock(ctx.paths);
  let f: VaultFacts | undefined;
  let pass: Uint8Array | undefined;
  try {
    pass = await ctx.unlockPassphrase();
    f = await vaultFacts(ctx, pass);
    const opened = openAnchoredJournals(anchorContext(ctx, f));
    let record: GapRecord | null;
    try {
      const d = decide(JournalGap.read(opened.journals.sessions));
      if (d === null) ctx.out(say.nothing);
      else {
        opened.journals.sessions.event(null, d.type, d.data);
        ctx.out(`${say.done}; journaled as ${d.type}`);
      }
      record = JournalGap.read(opened.journals.sessions).record();
    } finally {
      opened.close();
    }
    if (JSON.stringify(record) !== JSON.stringify(f.journalGap ?? null)) await writeVault(ctx, pass, (v) => v.recordJournalGap(record), undefined, 'anchor gap decision');
  } finally {
    f?.wipe();
    pass?.fill(0);
    await lock.release();
  }
}

/** One line per fact, for `anchor status` and `doctor`. */
export function describeInspection(i: AnchorInspection): { ok: boolean; line: string } {
  switch (i.anchor) {
    case 'none':
      return i.journals === 'none'
        ? { ok: true, line: 'no journal and no anchor yet: the daemon creates both when it first starts' }
        : { ok: false, line: 'the journal exists but its anchor is missing: the daemon will not start; run `postern anchor new-journal`' };
    case 'malformed':
      return { ok: false, line: 'the anchor file is malformed: the daemon will not start; run `postern anchor new-journal`' };
    case 'forged':
      return { ok: false, line: `the anchor does not verify with this vault (forged, or from another vault): the daemon will not start` };
    case 'authentic':
    case 'unchecked': {
      const r = i.record;
      const facts = `journal ${r.journal_id}, counter ${r.counter}, activity seq ${r.activity.seq}, sessions seq ${r.sessions.seq}, vault generation ${r.vault_generation}, written ${r.at}`;
      const how = i.anchor === 'authentic' ? 'authenticated' : 'MAC not checked (needs the passphrase)';
      switch (i.verdict.kind) {
        case 'ok': {
          const tail = i.verdict.tail.activity + i.verdict.tail.sessions;
          return { ok: true, line: `journal matches its anchor (${how}; ${facts})${tail > 0 ? `; ${tail} entries past it (adopted at the next start)` : ''}` };
        }
        case 'journal_mismatch':
          return { ok: false, line: `${describeProblem(i.verdict.problem)} (${how}; anchor: ${facts})` };
        case 'vault_rolled_back':
          return { ok: false, line: `the vault is generation ${i.verdict.found}, older than generation ${i.verdict.anchored} in the anchor: an older vault.pvlt was put back; restore the newest, or run \`postern anchor accept-vault\`` };
      }
    }
  }
}

/** The most held keys `restore-journal` names one by one. */
const KEYS_LISTED = 20;

/** What a restore did, for the operator: the gap, the keys refused, and how to release them. */
function reportRestore(ctx: CliContext, backup: string, plan: RestorePlan): void {
  const g = plan.gap;
  ctx.out(`restored journal ${plan.journalId} from ${clean(backup, 300)} (activity seq ${g.backup.activity}, sessions seq ${g.backup.sessions}); journaled as journal_restored`);
  if (g.anchored.activity > g.backup.activity) ctx.out(`gap: activity seq ${g.backup.activity + 1}–${g.anchored.activity}; ${g.keys.length} key(s) read as claimed there are refused OUTCOME_UNKNOWN until released`);
  else if (g.complete) ctx.out('gap: none (the backup reaches where the anchor says the journal ended)');
  if (!g.complete) ctx.out('not all of the gap could be read and proved against the anchor and the signed checkpoints (rows changed, removed or damaged, or no authentic anchor says where the journal ended): every key the restored journal does not know is refused OUTCOME_UNKNOWN until you check the targets and release it, or run `postern anchor close-gap`');
  const held = plan.state.heldKeys(KEYS_LISTED + 1);
  if (held.length > 0) {
    ctx.out(`keys refused until released (this restore's and earlier restores' still held):`);
    for (const k of held.slice(0, KEYS_LISTED)) ctx.out(`  ${clean(k.tool, 64)} ${clean(k.key, 200)}`);
    if (held.length > KEYS_LISTED) ctx.out(`  … and more (\`postern audit session --daemon\` shows the journal_restored entry)`);
  }
  if (held.length > 0 || plan.state.unread) ctx.out('after checking at the target that a key\'s action did not happen: `postern anchor release-key TOOL KEY`');
  if (plan.movedTo !== null) ctx.out(`the replaced journal was moved to ${clean(plan.movedTo, 300)}`);
}

export function registerAnchor(program: Command): void {
  const anchor = program.command('anchor').description('the authenticated anchor of the journals: check it, start a new journal, restore an older one, accept an older vault').addHelpText('after', examples([
    'postern anchor status                      # the journals and the vault against the anchor (asks for the passphrase)',
    'postern anchor restore-journal ./backup    # put back a journal backup (daemon stopped)',
  ]));

  anchor
    .command('status')
    .description('check the journals and the vault against the anchor (passphrase; changes nothing); exits 1 on a mismatch')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const f = await vaultFacts(ctx);
      try {
        const i = inspectAnchor(ctx.paths.journalDir, ctx.paths.anchor, f.key, f.generation);
        const d = describeInspection(i);
        // What the daemon's start also refuses: checkpoints behind the vault's record, claims the chain does not prove.
        const checkpoints = checkpointsShortOfVault(ctx.paths.checkpoints, f.journal?.checkpoints);
        const claims = inspectClaims(ctx.paths.journalDir, f.key);
        const ok = d.ok && checkpoints === null && claims === null;
        if (o.json === true) ctx.out(JSON.stringify({ ...i, vault_generation: f.generation, checkpoints_problem: checkpoints, claims_problem: claims, ok }, null, 2));
        else for (const line of [d.line, checkpoints, claims]) if (line !== null) ctx.out(clean(line, 2000));
        if (!ok) process.exitCode = 1;
      } finally {
        f.wipe();
      }
    });

  anchor
    .command('new-journal')
    .description('start a new journal (the old files are kept aside); for a journal that is lost, emptied, replaced or rolled back')
    .option('--reason <text>', 'why, recorded in the new journal', 'operator started a new journal')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (o: { reason: string; yes?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const question = 'Start a new journal? Idempotency keys completed in the old one will not be known to it, so a retry with such a key could run again.';
      const plan = await replaceJournal(
        ctx,
        o,
        question,
        (a, f) => {
          const gapRecord = gapForNewJournal(a, f.journalGap);
          return { ...prepareNewJournal(a, o.reason.slice(0, 500), gapRecord), gapRecord };
        },
        'anchor new-journal',
      );
      if (plan !== null) ctx.out(`started journal ${plan.journalId}${plan.movedTo === null ? '' : `; the old journal was moved to ${clean(plan.movedTo, 300)}`}`);
    });

  anchor
    .command('restore-journal <backup>')
    .description("put back an older copy of this home's journal directory; the gap up to where the anchor says the journal ended is journaled, and a key that may have been claimed in it is refused (OUTCOME_UNKNOWN) until you release it")
    .option('--reason <text>', 'why, recorded in the restored journal', 'operator restored an older journal')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (backup: string, o: { reason: string; yes?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const question = 'Restore this older journal? Calls journaled after it are lost from the journal; their keys are refused until you check the targets and release them.';
      const plan = await replaceJournal(ctx, o, question, (a, f) => {
        const p = prepareRestore(a, resolve(backup), o.reason.slice(0, 500), f.journalGap);
        return { ...p, gapRecord: p.state.record() };
      }, 'anchor restore-journal');
      if (plan === null) return;
      reportRestore(ctx, backup, plan);
    });

  anchor
    .command('release-key <tool> <key>')
    .description('let one idempotency key that a restored journal\'s gap holds run again, after you checked at the target that its action did not happen (journaled)')
    .option('--reason <text>', 'what you checked, recorded in the journal', 'operator checked the target')
    .action(async (tool: string, key: string, o: { reason: string }, cmd: Command) => {
      await journalGapDecision(contextFor(cmd), (gap) => (gap.refusal(tool, key) === undefined ? null : { type: 'journal_key_released', data: { tool, key, by: 'operator', reason: o.reason.slice(0, 500) } }), {
        done: `released key ${clean(key, 200)} of ${clean(tool, 64)}: a call with it now runs`,
        nothing: `key ${clean(key, 200)} of ${clean(tool, 64)} is not held by a restored journal's gap; nothing changed`,
      });
    });

  anchor
    .command('close-gap')
    .description("end the refusals a restored journal's gap causes, after you checked the targets: every key it held runs again (journaled)")
    .option('--reason <text>', 'what you checked, recorded in the journal', 'operator checked the targets')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (o: { reason: string; yes?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (o.yes !== true && !canPrompt()) throw new PosternError('USAGE', 'no terminal to confirm: pass --yes');
      if (o.yes !== true && !confirm('Close the gap? A retry with a key claimed in it could then run again.')) {
        ctx.out('nothing changed');
        return;
      }
      await journalGapDecision(ctx, (gap) => (gap.open ? { type: 'journal_gap_closed', data: { by: 'operator', reason: o.reason.slice(0, 500) } } : null), {
        done: 'closed the gap: keys it held now run',
        nothing: 'no restored journal holds a gap; nothing changed',
      });
    });

  anchor
    .command('accept-vault')
    .description('accept a vault generation older than the one the anchor records (an older vault.pvlt restored on purpose); journaled')
    .option('-y, --yes', 'do not ask for confirmation')
    .action(async (o: { yes?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      // The daemon lock first: with a daemon running, nothing is asked (DAEMON_RUNNING).
      const lock = await takeDaemonLock(ctx.paths);
      let f: Awaited<ReturnType<typeof vaultFacts>> | undefined;
      let pass: Uint8Array | undefined;
      try {
        pass = await ctx.unlockPassphrase();
        f = await vaultFacts(ctx, pass);
        const i = inspectAnchor(ctx.paths.journalDir, ctx.paths.anchor, f.key, f.generation);
        if (i.anchor !== 'authentic' || i.verdict.kind !== 'vault_rolled_back') {
          const d = describeInspection(i);
          if (d.ok) ctx.out(`nothing to accept: ${clean(d.line, 2000)}`);
          else throw new PosternError('JOURNAL_ANCHOR_MISMATCH', `nothing accepted: ${clean(d.line, 2000)}`);
          return;
        }
        if (o.yes !== true) {
          if (!canPrompt()) throw new PosternError('USAGE', 'no terminal to confirm: pass --yes');
          if (!confirm(`Accept vault generation ${i.verdict.found} (the anchor last saw ${i.verdict.anchored})? Rotations, removals and passphrase changes made after it stay undone.`)) {
            ctx.out('nothing changed');
            return;
          }
        }
        const opened = openAnchoredJournals(anchorContext(ctx, f), { acceptVault: true });
        let gap: GapRecord | null;
        try {
          gap = JournalGap.read(opened.journals.sessions).record();
        } finally {
          opened.close();
        }
        // An older vault carries an older record of the journal: it now records the one accepted with it.
        await recordAnchoredJournal(ctx, pass, gap);
        ctx.out(`accepted vault generation ${i.verdict.found} (the anchor had ${i.verdict.anchored}); journaled`);
      } finally {
        f?.wipe();
        pass?.fill(0);
        await lock.release();
      }
    });
}
