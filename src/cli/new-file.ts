/**
 * Opens a file the CLI writes for the operator (an export, a bundle): created
 * new with mode 600, never over an existing one. Fails with FILE_IO and one
 * line: `<failure> <file>: <why>`.
 */
import { openSync } from 'node:fs';
import { PosternError } from '../rules/errors.js';
import { sanitizeForTerminal as clean } from '../rules/terminal-text.js';

export function openNewPrivateFile(file: string, failure: string): number {
  try {
    return openSync(file, 'wx', 0o600);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    const why = code === 'EEXIST' ? 'it already exists: give a new file name' : `cannot create it (${code})`;
    throw new PosternError('FILE_IO', `${failure} ${clean(file, 200)}: ${why}`);
  }
}
