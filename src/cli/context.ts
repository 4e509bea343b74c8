/**
 * What every CLI command needs: the home's paths, how to obtain the
 * passphrase (file, environment or terminal) and how to print. Commands get
 * a context from their commander `Command`; they never read process state
 * themselves, so one place decides where a passphrase may come from.
 */
import { foldLinesToWidth, rowWidth } from '../rules/terminal-text.js';
import { lstat, readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock/index.js';
import { describeRecovery, finishPendingChange } from '../home/change-record.js';
import { homePaths, resolveHome, type HomePaths } from '../home/paths.js';
import { PosternError } from '../rules/errors.js';
import { kdfProfileFromEnvironment, vaultOptionsFor, type KdfProfile, type VaultOptions } from '../vault/index.js';
import { canPrompt, isJsonDocument, promptHidden, promptNote, textColumns } from './tty.js';

const MIN_PASSPHRASE_LENGTH = 12;

/** A link `link` prints whole: http(s), printable ASCII, no space. */
const WHOLE_LINK = /^https?:\/\/[\x21-\x7e]+$/;

export interface CliContext {
  readonly paths: HomePaths;
  /**
   * Passphrase of an existing vault. No source → VAULT_LOCKED. On a terminal,
   * says "unlocking vault…" on stderr, since the key derivation that follows
   * takes seconds (`notice: false` when something else is asked first).
   */
  unlockPassphrase(opts?: { notice?: boolean }): Promise<Uint8Array>;
  /**
   * A new passphrase: from `file`, else from the global passphrase file (unless
   * `ignoreGlobalFile`, used when that file holds the old one), else asked twice,
   * up to three times when it is too short or the two entries differ.
   */
  newPassphrase(opts?: { file?: string | undefined; ignoreGlobalFile?: boolean }): Promise<Uint8Array>;
  out(line: string): void;
  /**
   * Prints a link of Postern's own whole, on a line of its own, so it is
   * copied in one piece (a terminal wraps it; nothing else is on its rows).
   * Anything but a plain printable http(s) URL is printed as `out` prints.
   */
  link(url: string): void;
  /** The command's one clock. */
  readonly clock: Clock;
  /** The key-derivation profile (production unless the test switch is set; see vault/kdf-profile.ts). */
  readonly kdf: KdfProfile;
  /** The options every vault operation of this command uses: the clock and the profile's costs. */
  readonly vault: VaultOptions;
}

/** True only when nothing is at `path` (any other problem is left to the command that opens it). */
async function missing(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

interface GlobalOpts {
  passphraseFile?: string;
  /** A command's own --json: its output is for a program. */
  json?: boolean;
  /** A command's own --format: json and github (workflow commands, one per line) are for a program too. */
  format?: string;
}

/** Reads a one-line secret from a file, dropping one trailing newline. */
export async function readLineFile(path: string, what: string): Promise<Uint8Array> {
  let raw: Buffer;
  try {
    raw = await readFile(path);
  } catch (e) {
    throw new PosternError('INPUT_INVALID', `cannot read the ${what} file ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
  let end = raw.length;
  if (end > 0 && raw[end - 1] === 0x0a) end--;
  if (end > 0 && raw[end - 1] === 0x0d) end--;
  const bytes = Uint8Array.from(raw.subarray(0, end));
  raw.fill(0);
  return bytes;
}

/** Tries a person gets at a new passphrase before the command gives up. */
const NEW_PASSPHRASE_TRIES = 3;

function strengthProblem(p: Uint8Array): PosternError | null {
  const chars = [...Buffer.from(p).toString('utf8')].length;
  return chars < MIN_PASSPHRASE_LENGTH ? new PosternError('PASSPHRASE_WEAK', `the passphrase must have at least ${MIN_PASSPHRASE_LENGTH} characters`) : null;
}

function checkStrength(p: Uint8Array): void {
  const problem = strengthProblem(p);
  if (problem !== null) throw problem;
}

/** Says on a terminal's stderr that the slow key derivation is running. */
export function unlockingNotice(): void {
  if (process.stderr.isTTY) process.stderr.write('unlocking vault…\n');
}

/** Asks twice, again (up to NEW_PASSPHRASE_TRIES) after a short or mismatched entry; the last problem is thrown. */
function askNewPassphrase(): Uint8Array {
  let last: PosternError | null = null;
  for (let i = 0; i < NEW_PASSPHRASE_TRIES; i++) {
    if (last !== null) promptNote(`${last.message}; try again (${NEW_PASSPHRASE_TRIES - i} ${NEW_PASSPHRASE_TRIES - i === 1 ? 'try' : 'tries'} left)`);
    const first = promptHidden(`New passphrase (at least ${MIN_PASSPHRASE_LENGTH} characters): `);
    last = strengthProblem(first);
    if (last !== null) {
      first.fill(0);
      continue;
    }
    const second = promptHidden('Repeat the passphrase: ');
    const same = Buffer.from(first).equals(Buffer.from(second));
    second.fill(0);
    if (same) return first;
    first.fill(0);
    last = new PosternError('PASSPHRASE_MISMATCH', 'the two passphrases differ');
  }
  const failure = last ?? new PosternError('PASSPHRASE_REQUIRED', 'no passphrase was entered');
  throw new PosternError(failure.code, `${failure.message}; nothing was changed`);
}

export function contextFor(cmd: Command): CliContext {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const passFile = opts.passphraseFile ?? process.env['POSTERN_PASSPHRASE_FILE'];
  const paths = homePaths(resolveHome());
  const kdf = kdfProfileFromEnvironment(process.env);
  return {
    paths,
    clock: systemClock,
    kdf,
    vault: vaultOptionsFor(kdf, systemClock),
    async unlockPassphrase(o = {}) {
      // A change a killed command left is finished before anything reads the home (src/home/change-record.ts).
      const recovered = describeRecovery(await finishPendingChange(paths));
      if (recovered !== undefined) process.stderr.write(`postern: ${recovered}\n`);
      // Before `init` there is nothing to unlock: say so, rather than asking for (or missing) a passphrase.
      if (await missing(paths.vault)) throw new PosternError('VAULT_NOT_FOUND', `no vault at ${paths.vault}: create one with \`postern init\``, { details: { path: paths.vault } });
      let p: Uint8Array;
      if (passFile !== undefined && passFile !== '') p = await readLineFile(passFile, 'passphrase');
      else if (!canPrompt()) {
        throw new PosternError('VAULT_LOCKED', 'the vault is locked and no passphrase was given: run in a terminal or pass --passphrase-file');
      } else p = promptHidden('Vault passphrase: ');
      if (o.notice !== false) unlockingNotice();
      return p;
    },
    async newPassphrase(o = {}) {
      const file = o.file ?? (o.ignoreGlobalFile === true ? undefined : passFile);
      if (file !== undefined && file !== '') {
        const p = await readLineFile(file, 'passphrase');
        checkStrength(p);
        return p;
      }
      if (!canPrompt()) {
        throw new PosternError('PASSPHRASE_REQUIRED', 'no terminal to ask for a passphrase: pass --passphrase-file');
      }
      return askNewPassphrase();
    },
    out(line: string) {
      const raw = process.stdout.isTTY !== true && (opts.json === true || opts.format === 'json' || opts.format === 'github' || isJsonDocument(line));
      process.stdout.write(terminalLines(line, raw ? undefined : textColumns(process.stdout, process.env)));
    },
    link(url: string) {
      process.stdout.write(linkLines(url, textColumns(process.stdout, process.env)));
    },
  };
}

/**
 * What `out` writes for one line: text (to a terminal, a pipe or a file —
 * a pager soft-wraps as a terminal does) has every row folded to `columns`
 * less the row margin, at a space where the row has one (words and
 * timestamps stay whole), behind a visible continuation mark, so text an
 * agent controls can never start a row of its own; `columns` undefined (JSON
 * to a pipe or a file) prints the line as it is.
 */
export function terminalLines(line: string, columns: number | undefined): string {
  if (columns === undefined || !Number.isFinite(columns) || columns < 1) return `${line}\n`;
  return `${foldLinesToWidth(line, rowWidth(columns), '', { atSpaces: true }).join('\n')}\n`;
}

/** What `link` writes: a plain http(s) link whole on its own line; anything else as terminalLines folds it. */
export function linkLines(url: string, columns: number | undefined): string {
  return WHOLE_LINK.test(url) ? `${url}\n` : terminalLines(url, columns);
}
