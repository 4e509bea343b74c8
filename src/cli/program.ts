/**
 * The `postern` program definition. Parses arguments with commander, runs one command and
 * turns every failure into one line on stderr with a stable code:
 *   postern: VAULT_AUTH: wrong passphrase, or the vault file was modified
 * Exit codes: 0 ok, 1 operational error, 2 usage. No stack trace reaches the
 * user unless POSTERN_DEBUG=1.
 */
import { Command, CommanderError, type OutputConfiguration } from 'commander';
import { ErrorCodes, isPosternError } from '../rules/errors.js';
import { assertHomeSafe } from '../home/permissions.js';
import { resolveHome } from '../home/paths.js';
import { registerCommands } from './commands/index.js';
import { examples } from './help.js';
import { STARTER_SECRET } from './starter-catalog.js';
import { VERSION } from '../version.js';

/**
 * Commands that check the home themselves: `init` creates it, `doctor` reports
 * on it, `mcp` holds no secrets and answers agents with a tool error, `demo`
 * makes a temporary home of its own; `setup` and `completion` only print or
 * write an agent host's files.
 */
const OWN_HOME_CHECK: ReadonlySet<string> = new Set(['init', 'doctor', 'mcp', 'demo', 'setup', 'completion']);

/** The top-level command (`secret` for `postern secret list`). */
function topLevel(cmd: Command): Command {
  let c = cmd;
  while (c.parent?.parent !== undefined && c.parent.parent !== null) c = c.parent;
  return c;
}

/**
 * Usage errors look like every other failure: `postern: USAGE: message`, one
 * line, then where to read more (commander's own "error: " prefix dropped).
 */
function usageLine(commanderMessage: string, commandPath: string): string {
  const msg = commanderMessage.trim().replace(/^error:\s*/, '').split('\n')[0] ?? '';
  return `postern: USAGE: ${msg} (see \`${commandPath} --help\`)\n`;
}

function commandPath(c: Command): string {
  const names: string[] = [];
  for (let x: Command | null = c; x !== null; x = x.parent) names.unshift(x.name());
  return names.join(' ');
}

function usageOutput(c: Command): OutputConfiguration {
  return {
    writeErr: (s: string): void => void process.stderr.write(s),
    outputError: (s: string, write: (s: string) => void): void => write(usageLine(s, commandPath(c))),
  };
}

async function buildProgram(argv: readonly string[] = []): Promise<Command> {
  const program = new Command();
  program
    .name('postern')
    .description('Approval-bound, credential-isolating action executor for AI agents')
    .version(VERSION, '-V, --version')
    .option('--passphrase-file <file>', 'read the vault passphrase from a file (env: POSTERN_PASSPHRASE_FILE)')
    .exitOverride();
  await registerCommands(program, argv);
  program.addHelpText('after', examples([
    'postern init                                # create the home and the vault',
    `postern secret add ${STARTER_SECRET} --kind http_bearer`,
    'postern catalog check && postern catalog accept',
    'postern daemon                              # then, in another terminal: postern approvals list',
    'postern setup claude-code                   # connect an agent host',
  ], 'Getting started'));
  // One home check for every command: a symlinked or open POSTERN_HOME is refused before anything is read.
  program.hook('preAction', async (_program, action) => {
    if (!OWN_HOME_CHECK.has(topLevel(action).name())) await assertHomeSafe(resolveHome());
  });
  // Every command, at every depth, reports usage errors the same way.
  const all = (c: Command): Command[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) c.exitOverride().configureOutput(usageOutput(c));
  return program;
}

function report(e: unknown): number {
  if (e instanceof CommanderError) {
    // commander already printed its message; help and version are not errors.
    if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return 0;
    return 2;
  }
  if (isPosternError(e)) {
    const issues = e.details['issues'];
    if (Array.isArray(issues) && issues.length > 1) {
      // Every problem, one per line (a catalog with several mistakes is fixed in one round).
      process.stderr.write(`postern: ${e.code}: ${issues.length} problems:\n${issues.map((i) => `  ${String(i)}\n`).join('')}`);
    } else process.stderr.write(`postern: ${e.code}: ${e.message}\n`);
    return ErrorCodes[e.code].exit;
  }
  const msg = e instanceof Error ? e.message.split('\n')[0] : String(e);
  process.stderr.write(`postern: INTERNAL: unexpected failure: ${msg}\n`);
  if (process.env['POSTERN_DEBUG'] === '1' && e instanceof Error) process.stderr.write(`${e.stack ?? ''}\n`);
  return 1;
}

export async function main(argv: string[]): Promise<number> {
  try {
    const program = await buildProgram(argv);
    await program.parseAsync(argv, { from: 'user' });
    // A command may report a non-error status (doctor --strict) through exitCode.
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    return report(e);
  }
}

