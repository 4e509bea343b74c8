/**
 * The read-only judgement of the journals against their last signed
 * checkpoint, for `postern audit verify`: never creates or writes anything,
 * needs no vault. `root` (a fingerprint or public key the person trusts)
 * pins the key; without it the first well-signed line's key is the root and
 * the result says it is not pinned. `vaultKey` (from `--unlock`) must be one
 * of the keys the walk reached. `judgeCheckpointFile` is the same judgement
 * over journals already open: the daemon's start (anchor/open.ts) refuses
 * what `verify --unlock` would report.
 */
import { openJournals, type JournalFacts } from '../index.js';
import { journalPresence } from '../presence.js';
import { readCheckpoints } from './file.js';
import { describeCheckpoint, duplicateCounters, judgeCheckpoint, lastCheckpoint, walkTrust, type CheckpointVerdict, type StoredCheckpoint, type TrustWalk } from './record.js';
import { describeProblem, type JournalProblem } from '../anchor-record.js';
import { keyFingerprint } from './signature.js';

export type CheckpointInspection =
  | { readonly kind: 'none'; readonly walk: TrustWalk }
  | { readonly kind: 'root_unseen'; readonly walk: TrustWalk }
  | { readonly kind: 'vault_key_unreached'; readonly walk: TrustWalk; readonly vault_key: string }
  | {
      readonly kind: 'judged';
      readonly walk: TrustWalk;
      readonly checkpoint: StoredCheckpoint;
      readonly verdict: CheckpointVerdict;
      /** The key was named by the verifier (or checked against the vault), not just taken from the file. */
      readonly pinned: boolean;
      /** Counters signed twice for other heads: a daemon ran again on an older journal and anchor put back. */
      readonly duplicates: readonly number[];
    };

type CheckpointOptions = { readonly root?: string; readonly vaultKey?: string };

/** The judgement of `facts` (undefined: the journal files are not all there) against the checkpoint file. */
export function judgeCheckpointFile(path: string, facts: JournalFacts | undefined, missing: JournalProblem, opts: CheckpointOptions = {}): CheckpointInspection {
  return judgeCheckpointLines(readCheckpoints(path), facts, missing, opts);
}

/** The same judgement over checkpoint lines read elsewhere (shipped ones: ship/verify.ts). */
export function judgeCheckpointLines(lines: readonly (StoredCheckpoint | 'malformed')[], facts: JournalFacts | undefined, missing: JournalProblem, opts: CheckpointOptions = {}): CheckpointInspection {
  const walk = walkTrust(lines, opts.root);
  if (walk.rootUnseen) return { kind: 'root_unseen', walk };
  if (opts.vaultKey !== undefined && walk.keys.length > 0 && !walk.keys.includes(opts.vaultKey)) return { kind: 'vault_key_unreached', walk, vault_key: opts.vaultKey };
  const journalId = facts?.activity.journal_id ?? undefined;
  // The last checkpoint of the journal found; of any journal when it has none (then: replaced).
  const last = lastCheckpoint(walk.accepted, journalId) ?? lastCheckpoint(walk.accepted);
  if (last === undefined) return { kind: 'none', walk };
  const pinned = opts.root !== undefined || opts.vaultKey !== undefined;
  const duplicates = duplicateCounters(walk.accepted);
  if (facts === undefined) return { kind: 'judged', walk, checkpoint: last, verdict: { kind: 'mismatch', problem: missing }, pinned, duplicates };
  return { kind: 'judged', walk, checkpoint: last, verdict: judgeCheckpoint(last.record, facts), pinned, duplicates };
}

export function inspectCheckpoints(journalDir: string, path: string, opts: CheckpointOptions = {}): CheckpointInspection {
  const presence = journalPresence(journalDir);
  const missing: JournalProblem = presence.kind === 'problem' ? presence.problem : { kind: 'missing', journal: 'activity' };
  const j = presence.kind === 'complete' ? openJournals(journalDir, { readonly: true }) : undefined;
  try {
    return judgeCheckpointFile(path, j?.facts(), missing, opts);
  } finally {
    j?.close();
  }
}

/** The start's refusal when the checkpoints say the journals are not the ones they signed (null: they agree, or there is none yet). */
export function checkpointRefusal(i: CheckpointInspection): string | null {
  const d = describeCheckpointInspection(i, false);
  return d.ok ? null : d.line;
}

function skipped(w: TrustWalk): string {
  const parts = [
    w.malformed > 0 ? `${w.malformed} malformed` : '',
    w.badSignature > 0 ? `${w.badSignature} with a bad signature` : '',
    w.untrusted > 0 ? `${w.untrusted} signed by another key` : '',
  ].filter((x) => x !== '');
  return parts.length === 0 ? '' : `; lines ignored: ${parts.join(', ')}`;
}

/** One line for a person, and whether it is a finding (exit 1). `required`: a missing checkpoint is a finding (a key was named). */
export function describeCheckpointInspection(i: CheckpointInspection, required: boolean): { ok: boolean; line: string } {
  switch (i.kind) {
    case 'none':
      return required
        ? { ok: false, line: `no checkpoint signed by the named key${skipped(i.walk)}` }
        : { ok: true, line: `no signed checkpoint yet (the daemon writes one when it starts)${skipped(i.walk)}` };
    case 'root_unseen':
      return { ok: false, line: `no checkpoint is signed by the named key${skipped(i.walk)}` };
    case 'vault_key_unreached':
      return { ok: false, line: `the checkpoints are signed by ${i.walk.keys.map(keyFingerprint).join(', ')}, not by this vault's key ${keyFingerprint(i.vault_key)}${skipped(i.walk)}` };
    case 'judged': {
      const which = describeCheckpoint(i.checkpoint.record);
      const pin = i.pinned ? '' : ' (key not pinned: compare its fingerprint with the one you noted, or pass --key)';
      if (i.duplicates.length > 0) {
        const n = i.duplicates.slice(0, 5).map((c) => `#${c}`).join(', ');
        return { ok: false, line: `checkpoint counter ${n} was signed twice for other heads: an older journal and its anchor were put back and run on; against ${which}${pin}${skipped(i.walk)}` };
      }
      if (i.verdict.kind === 'mismatch') {
        const p = i.verdict.problem;
        const what = p.kind === 'base_mismatch' ? `the ${p.journal} journal starts after seq ${p.found_seq} but the checkpoint says ${p.checkpoint_seq}: entries were removed without a signed prune` : describeProblem(p);
        return { ok: false, line: `${what}; against ${which}${pin}${skipped(i.walk)}` };
      }
      const tail = i.verdict.tail.activity + i.verdict.tail.sessions;
      const unfinished = i.verdict.unfinishedPrune === null ? '' : `; the prune it signs is not finished (${Object.keys(i.verdict.unfinishedPrune).join(' and ')}): the next daemon start or operator command finishes it`;
      return { ok: true, line: `journal matches ${which}${tail > 0 ? `; ${tail} entries since` : ''}${unfinished}${pin}${skipped(i.walk)}` };
    }
  }
}
