/**
 * How an agent host launches `postern mcp`: by absolute paths only. The node
 * binary running this CLI and the realpath of this CLI's own main.js — never a
 * name looked up on PATH or through npx, which outside this repository would
 * fetch whatever package the registry has under that name (DESIGN §12).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { isAbsolute, resolve } from 'node:path';
import { PosternError } from '../../rules/errors.js';
import { packageFile } from '../../package-files.js';

export interface LaunchSpec {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

// C0 and C1 controls, DEL: no host config format carries them safely, and no real path needs them.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

function checked(path: string, what: string): string {
  if (!isAbsolute(path)) throw new PosternError('INTERNAL', `the ${what} path is not absolute`);
  if (CONTROL.test(path)) throw new PosternError('USAGE', `the ${what} path contains control characters; move it to a plain path`);
  return path;
}

/** The entry script of the running CLI (dist/cli/main.js), symlinks (npm link, npm install -g) resolved. */
export function cliEntry(): string {
  return realpathSync(fileURLToPath(packageFile('cli/main.js')));
}

export function launchSpec(home: string, opts: { node?: string; entry?: string } = {}): LaunchSpec {
  const node = checked(opts.node ?? process.execPath, 'node');
  const entry = checked(opts.entry ?? cliEntry(), 'postern');
  return { command: node, args: [entry, 'mcp'], env: { POSTERN_HOME: checked(resolve(home), 'Postern home') } };
}
