/**
 * The `postern` program definition. Parses arguments with commander, runs one command and
 * turns every failure into one line on stderr with a stable code:
 *   postern: VAULT_AUTH: wrong passphrase, or the vault file was modified
 * Exit codes: 0 ok, 1 operational error, 2 usage. No stack trace reaches the
 * user unless POSTERN_DEBUG=1.
 */
import { Command, CommanderError } from 'commander';
import { ErrorCodes, isPosternError } from '../protocol/errors.js';
import { assertHomeSafe } from '../home/permissions.js';
import { resolveHome } from '../home/paths.js';
import { registerCommands } from './commands/index.js';
import { VERSION } from '../version.js';

/**
 * Commands that check the home themselves: `init` creates it, `doctor` reports
 * on it, `mcp` holds no secrets and answers agents with a tool error, `demo`
 * makes a temporary home of its own.
 */
const OWN_HOME_CHECK: ReadonlySet<string> = new Set(['init', 'doctor', 'mcp', 'demo']);

/** The top-level command (`secret` for `postern secret list`). */
function topLevel(cmd: Command): Command {
  let c = cmd;
  while (c.parent?.parent !== undefined && c.parent.parent !== null) c = c.parent;
  return c;
}

export function buildProgram(): Command {
  const program = new Command();
  program
    .name('postern')
    .description('Approval-bound, credential-isolating action executor for AI agents')
    .version(VERSION, '-V, --version')
    .option('--passphrase-file <file>', 'read the vault passphrase from a file (env: POSTERN_PASSPHRASE_FILE)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerCommands(program);
  // One home check for every command: a symlinked or open POSTERN_HOME is refused before anything is read.
  program.hook('preAction', async (_program, action) => {
    if (!OWN_HOME_CHECK.has(topLevel(action).name())) await assertHomeSafe(resolveHome());
  });
  // Subcommands inherit the usage-error handling.
  for (const c of program.commands) c.exitOverride();
  return program;
}

function report(e: unknown): number {
  if (e instanceof CommanderError) {
    // commander already printed its message; help and version are not errors.
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return 0;
    return 2;
  }
  if (isPosternError(e)) {
    process.stderr.write(`postern: ${e.code}: ${e.message}\n`);
    return ErrorCodes[e.code].exit;
  }
  const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
  process.stderr.write(`postern: INTERNAL: unexpected failure: ${msg}\n`);
  if (process.env['POSTERN_DEBUG'] === '1' && e instanceof Error) process.stderr.write(`${e.stack ?? ''}\n`);
  return 1;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    // A command may report a non-error status (doctor --strict) through exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    return report(e);
  }
}

