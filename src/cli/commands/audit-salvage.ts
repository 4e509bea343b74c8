/**
 * `postern audit salvage <journal-dir> --out FILE`: what can still be read of
 * a damaged journal (journal/salvage.ts), copied to a new private file as
 * the JSON lines `audit export` writes (sessions, then activity, each entry
 * tagged with its journal), with one line per range that cannot be read
 * (`{"journal":…,"unreadable":{"from":A,"to":B|null}}`) where it falls, so
 * the copy says exactly which entries are missing and the chain's gap is in
 * plain sight. Read-only (the directory is never written; no passphrase);
 * the copy is for reading and for the incident, not for the daemon: to put a
 * journal back, see `postern anchor restore-journal`.
 */
import { closeSync, existsSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { salvageJournal, type SalvageReport } from '../../journal/salvage.js';
import type { EntryRow } from '../../journal/chain.js';
import { ACTIVITY_SCHEMA } from '../../journal/activity-schema.js';
import { SESSIONS_SCHEMA } from '../../journal/sessions.js';
import { PosternError } from '../../rules/errors.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { contextFor } from '../context.js';
import { openNewPrivateFile } from '../new-file.js';

const JOURNALS = ['sessions', 'activity'] as const;
const JOURNAL_FILES = { sessions: SESSIONS_SCHEMA.file, activity: ACTIVITY_SCHEMA.file } as const;

function line(journal: string, row: EntryRow): string {
  const { body, ...rest } = row;
  let data: unknown = body;
  try {
    data = JSON.parse(String(body));
  } catch {
    // a body that does not parse is kept as its text
  }
  return JSON.stringify({ journal, ...rest, data });
}

export function registerAuditSalvage(audit: Command): void {
  audit
    .command('salvage <journal-dir>')
    .description('copy what can still be read of a damaged journal directory to a new file, as JSON lines, with a line for each range that cannot be read (read-only; no passphrase)')
    .requiredOption('--out <file>', 'write to this new file (mode 600)')
    .action((dir: string, o: { out: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const present = JOURNALS.filter((j) => existsSync(join(dir, JOURNAL_FILES[j])));
      if (present.length === 0) {
        throw new PosternError('INPUT_INVALID', `nothing to salvage: ${clean(dir, 200)} holds no journal file (${Object.values(JOURNAL_FILES).join(', ')}); a home whose daemon never ran has no journal yet`);
      }
      const fd = openNewPrivateFile(o.out, 'nothing salvaged to');
      const reports: SalvageReport[] = [];
      try {
        const write = (l: string): void => {
          const buf = Buffer.from(`${l}\n`, 'utf8');
          for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
        };
        for (const journal of present) {
          const r = salvageJournal(
            dir,
            journal,
            (row) => write(line(journal, row)),
            (u) => write(JSON.stringify({ journal, unreadable: u })),
          );
          reports.push(r);
        }
        closeSync(fd);
      } catch (e) {
        try {
          closeSync(fd);
        } catch {
          // already closed
        }
        unlinkSync(o.out);
        if (e instanceof PosternError) throw e;
        throw new PosternError('FILE_IO', `salvage to ${clean(o.out, 200)} failed (${(e as NodeJS.ErrnoException).code ?? 'error'}); the partial file was removed`);
      }
      for (const j of JOURNALS.filter((n) => !present.includes(n))) ctx.out(`${j}: no journal file (${JOURNAL_FILES[j]}): nothing to salvage`);
      for (const r of reports) {
        const ranges = r.unreadable.map((u) => `seq ${u.from} to ${u.to === null ? 'the end' : `seq ${u.to}`}`);
        ctx.out(`${r.journal}: ${r.entries} entries salvaged${ranges.length === 0 ? ', nothing unreadable' : `; unreadable: ${ranges.join(', ')}`}`);
      }
      ctx.out(`written to ${clean(o.out, 200)}`);
    });
}
