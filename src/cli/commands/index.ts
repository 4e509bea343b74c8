/**
 * The command table: each top-level command and the module that registers
 * it, in the order `postern --help` lists them. A run imports only the module
 * of the command it names (`postern --version` imports none, `postern
 * approvals` does not load the daemon, ink or React); the whole table is
 * loaded only when no known command is named (top-level help, a typo that
 * commander answers with a suggestion) or for `completion`, which prints the
 * whole command tree.
 */
import type { Command } from 'commander';

type Register = (program: Command) => void;
type Loader = () => Promise<Register>;

const daemonAndMcp: Loader = () => import('./daemon.js').then((m) => m.registerDaemon);

const COMMANDS: readonly (readonly [name: string, load: Loader])[] = [
  ['init', () => import('./init.js').then((m) => m.registerInit)],
  ['secret', () => import('./secret.js').then((m) => m.registerSecret)],
  ['passwd', () => import('./passwd.js').then((m) => m.registerPasswd)],
  ['status', () => import('./status.js').then((m) => m.registerStatus)],
  ['doctor', () => import('./doctor.js').then((m) => m.registerDoctor)],
  ['catalog', () => import('./catalog.js').then((m) => m.registerCatalog)],
  ['daemon', daemonAndMcp],
  ['mcp', daemonAndMcp],
  ['approvals', () => import('./approvals.js').then((m) => m.registerApprovals)],
  ['audit', () => import('./audit.js').then((m) => m.registerAudit)],
  ['ssh', () => import('./ssh.js').then((m) => m.registerSsh)],
  ['anchor', () => import('./anchor.js').then((m) => m.registerAnchor)],
  ['setup', () => import('./setup.js').then((m) => m.registerSetup)],
  ['completion', () => import('./completion.js').then((m) => m.registerCompletion)],
  ['demo', () => import('./demo.js').then((m) => m.registerDemo)],
  ['attach', () => import('./attach.js').then((m) => m.registerAttach)],
  ['up', () => import('./up.js').then((m) => m.registerUp)],
  ['http', () => import('./http.js').then((m) => m.registerHttp)],
  ['agents', () => import('./agents.js').then((m) => m.registerAgents)],
  ['ssh-gateway', () => import('./ssh-gateway.js').then((m) => m.registerSshGateway)],
];

/** Top-level options that take a value (the word after them is not a command). */
const VALUE_OPTIONS: ReadonlySet<string> = new Set(['--passphrase-file']);

/** The command word of `argv` (`secret` in `--passphrase-file f secret list`), if any. */
function commandWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '--') return argv[i + 1];
    if (VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/** Commands that need the whole table. */
const WHOLE_TABLE: ReadonlySet<string> = new Set(['completion', 'help']);

/** Registers what `argv` runs: its one command, or every command when it names none (or needs them all). */
export async function registerCommands(program: Command, argv: readonly string[]): Promise<void> {
  const word = commandWord(argv);
  const one = word === undefined || WHOLE_TABLE.has(word) ? undefined : COMMANDS.find(([name]) => name === word);
  const version = argv.includes('-V') || argv.includes('--version');
  if (one === undefined && word === undefined && version) return; // `postern --version`: no command needed
  const loaders = one === undefined ? [...new Set(COMMANDS.map(([, load]) => load))] : [one[1]];
  for (const register of await Promise.all(loaders.map((load) => load()))) register(program);
}
