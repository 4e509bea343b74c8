/**
 * The terminal side of the CLI: reading secrets without echo, and the width
 * text output is folded to. Only a real TTY is used for prompts; piped input
 * never gets a prompt (it would hang an automated run). The typed bytes are
 * returned as a Uint8Array; the intermediate buffers are zeroed before
 * returning. Text output is folded on a terminal and to a pipe alike (a
 * pager soft-wraps long rows too); only JSON to a pipe is left as it is.
 */
import { openSync, closeSync, readSync, writeSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { PosternError } from '../rules/errors.js';

/** True when this process can prompt a person on its controlling terminal. */
export function canPrompt(): boolean {
  try {
    const fd = openSync('/dev/tty', 'r+');
    closeSync(fd);
    return true;
  } catch {
    return false;
  }
}

function setEcho(ttyFd: number, on: boolean): void {
  // `stty` acts on its stdin, which we point at the controlling terminal.
  spawnSync('stty', [on ? 'echo' : '-echo'], { stdio: [ttyFd, 'ignore', 'ignore'] });
}

/**
 * Prompts on /dev/tty and reads one line with echo off. Ctrl-C or end of input
 * aborts with USAGE. Lines longer than 4096 bytes are refused.
 */
export function promptHidden(prompt: string): Uint8Array {
  const fd = openSync('/dev/tty', 'r+');
  const buf = Buffer.alloc(4097);
  let len = 0;
  try {
    // Echo goes off before the prompt is shown: what is typed once the prompt appears is never echoed.
    setEcho(fd, false);
    writeSync(fd, prompt);
    const one = Buffer.alloc(1);
    for (;;) {
      const n = readSync(fd, one, 0, 1, null);
      if (n === 0) throw new PosternError('USAGE', 'input ended before a line was entered');
      const c = one[0]!;
      if (c === 0x0a || c === 0x0d) break;
      if (c === 0x03) throw new PosternError('USAGE', 'cancelled');
      if (len >= 4096) throw new PosternError('INPUT_INVALID', 'input line is longer than 4096 bytes');
      buf[len++] = c;
    }
    return Uint8Array.from(buf.subarray(0, len));
  } finally {
    setEcho(fd, true);
    writeSync(fd, '\n');
    closeSync(fd);
    buf.fill(0);
  }
}

/** Writes one line to the terminal (between prompts), not to stdout or stderr. */
export function promptNote(line: string): void {
  const fd = openSync('/dev/tty', 'r+');
  try {
    writeSync(fd, `${line}\n`);
  } finally {
    closeSync(fd);
  }
}

/** Asks a yes/no question on the terminal; anything but y/yes is no. */
export function confirm(question: string): boolean {
  const fd = openSync('/dev/tty', 'r+');
  try {
    writeSync(fd, `${question} [y/N] `);
    const buf = Buffer.alloc(16);
    const n = readSync(fd, buf, 0, buf.length, null);
    const answer = buf.subarray(0, n).toString('utf8').trim().toLowerCase();
    return answer === 'y' || answer === 'yes';
  } finally {
    closeSync(fd);
  }
}

/** The width text output is folded to when it does not go to a terminal and COLUMNS does not say. */
export const PIPE_COLUMNS = 100;

/** Columns to fold text output to: the terminal's; otherwise COLUMNS (20–1000), else PIPE_COLUMNS. */
export function textColumns(stream: { readonly isTTY?: boolean; readonly columns?: number }, env: NodeJS.ProcessEnv): number {
  if (stream.isTTY === true && typeof stream.columns === 'number' && stream.columns > 0) return stream.columns;
  const given = Number(env['COLUMNS']);
  return Number.isInteger(given) && given >= 20 && given <= 1000 ? given : PIPE_COLUMNS;
}

/** True when a line of output is one JSON object or array (a report a program reads). */
export function isJsonDocument(line: string): boolean {
  const t = line.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  try {
    JSON.parse(line);
    return true;
  } catch {
    // JSON Lines written in one go (`audit export`): every line a document of its own.
    const rows = line.split('\n').filter((r) => r.trim() !== '');
    return rows.length > 1 && rows.every((r) => isOneDocument(r));
  }
}

function isOneDocument(row: string): boolean {
  const t = row.trimStart();
  if (!t.startsWith('{') && !t.startsWith('[')) return false;
  try {
    JSON.parse(row);
    return true;
  } catch {
    return false;
  }
}
