/**
 * What every CLI command needs: the home's paths, how to obtain the
 * passphrase (file, environment or terminal) and how to print. Commands get
 * a context from their commander `Command`; they never read process state
 * themselves, so one place decides where a passphrase may come from.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock/index.js';
import { homePaths, resolveHome, type HomePaths } from '../home/paths.js';
import { PosternError } from '../protocol/errors.js';
import { canPrompt, promptHidden } from './tty.js';

export const MIN_PASSPHRASE_LENGTH = 12;

export interface CliContext {
  readonly paths: HomePaths;
  /** Passphrase of an existing vault. No source → VAULT_LOCKED. */
  unlockPassphrase(): Promise<Uint8Array>;
  /**
   * A new passphrase: from `file`, else from the global passphrase file (unless
   * `ignoreGlobalFile`, used when that file holds the old one), else asked twice.
   */
  newPassphrase(opts?: { file?: string | undefined; ignoreGlobalFile?: boolean }): Promise<Uint8Array>;
  out(line: string): void;
  /** The command's one clock. */
  readonly clock: Clock;
}

interface GlobalOpts {
  passphraseFile?: string;
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

function checkStrength(p: Uint8Array): void {
  const chars = [...Buffer.from(p).toString('utf8')].length;
  if (chars < MIN_PASSPHRASE_LENGTH) {
    throw new PosternError('PASSPHRASE_WEAK', `the passphrase must have at least ${MIN_PASSPHRASE_LENGTH} characters`);
  }
}

export function contextFor(cmd: Command): CliContext {
  const opts = cmd.optsWithGlobals<GlobalOpts>();
  const passFile = opts.passphraseFile ?? process.env['POSTERN_PASSPHRASE_FILE'];
  const paths = homePaths(resolveHome());
  return {
    paths,
    clock: systemClock,
    async unlockPassphrase() {
      if (passFile !== undefined && passFile !== '') return readLineFile(passFile, 'passphrase');
      if (!canPrompt()) {
        throw new PosternError('VAULT_LOCKED', 'the vault is locked and no passphrase was given: run in a terminal or pass --passphrase-file');
      }
      return promptHidden('Vault passphrase: ');
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
      const first = promptHidden(`New passphrase (at least ${MIN_PASSPHRASE_LENGTH} characters): `);
      checkStrength(first);
      const second = promptHidden('Repeat the passphrase: ');
      const same = Buffer.from(first).equals(Buffer.from(second));
      second.fill(0);
      if (!same) {
        first.fill(0);
        throw new PosternError('PASSPHRASE_MISMATCH', 'the two passphrases differ; nothing was changed');
      }
      return first;
    },
    out(line: string) {
      process.stdout.write(`${line}\n`);
    },
  };
}
