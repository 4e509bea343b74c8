/**
 * Which journal files are there, judged before anything opens (and could
 * create) them: none (a new home), both with bytes, or the first problem
 * (a file missing or empty). Shared by anchor/ (open, restore) and
 * checkpoint/ (inspect).
 */
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { PosternError } from '../rules/errors.js';
import { ACTIVITY_SCHEMA } from './activity-schema.js';
import type { JournalName } from './database.js';
import { SESSIONS_SCHEMA } from './sessions.js';
import type { JournalProblem } from './anchor-record.js';

const FILES: Readonly<Record<JournalName, string>> = { sessions: SESSIONS_SCHEMA.file, activity: ACTIVITY_SCHEMA.file };

export type Presence = { readonly kind: 'none' } | { readonly kind: 'complete' } | { readonly kind: 'problem'; readonly problem: JournalProblem };

export function sizeOf(path: string): number | undefined {
  try {
    return lstatSync(path).size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new PosternError('JOURNAL_UNAVAILABLE', `journal: cannot inspect ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** Which journal files are there, before anything opens (and could create) them. */
export function journalPresence(dir: string): Presence {
  const sizes = (['sessions', 'activity'] as const).map((j) => [j, sizeOf(join(dir, FILES[j]))] as const);
  if (sizes.every(([, s]) => s === undefined)) return { kind: 'none' };
  for (const [journal, size] of sizes) {
    if (size === undefined) return { kind: 'problem', problem: { kind: 'missing', journal } };
    if (size === 0) return { kind: 'problem', problem: { kind: 'empty', journal } };
  }
  return { kind: 'complete' };
}

