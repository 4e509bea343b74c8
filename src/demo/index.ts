/**
 * `postern demo`: the embedded default behind `npm start`. Builds a
 * throwaway world (world.ts), prints how to point an agent at it, then
 * either runs the scripted agent through the story (story.ts) with the
 * approvals decided by an operator (operator.ts) — and exits 0 with a summary
 * only when every step behaved, the request log agrees, and no credential
 * appeared anywhere — or, with `--no-agent`, serves the demo to a real agent
 * until Ctrl-C.
 *
 * Invariants: everything started is stopped and the home removed (unless
 * `keep`) on success, failure and interruption alike; an interruption stops
 * the run at once (pending calls fail as their connections close).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../clock/index.js';
import { isPosternError, PosternError } from '../rules/errors.js';
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import { startAgent } from './agent.js';
import { leakedCredentials } from './canary.js';
import { DEMO_CREDENTIALS } from './catalog.js';
import { narrator, type Narrator } from './narrate.js';
import { scriptedOperator, type DemoOperator } from './operator.js';
import { mcpSnippet, type DemoLaunch } from './snippet.js';
import { describeRequest, runStory } from './story.js';
import { describeKdf, TEST_KDF_SWITCH, TEST_KDF_SWITCH_VALUE } from '../vault/index.js';
import { buildWorld, DEMO_KDF, type DemoWorld } from './world.js';
import { operateInTui } from './tui.js';

interface DemoOptions {
  /** Run the scripted agent through the story (otherwise serve until interrupted). */
  readonly agent: boolean;
  /** No terminal UI: approvals decided by the script, and the run ends after the story (or at Ctrl-C with no agent). */
  readonly headless: boolean;
  readonly keep: boolean;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  readonly write: (text: string) => void;
  /** The terminal's width, to wrap the narration to; absent without a terminal. */
  readonly columns?: number;
  /** How an agent host launches this CLI (the rule is src/cli/setup's; the command passes it in). */
  readonly launch: DemoLaunch;
}

/** Exit status for an interrupted run (128 + SIGINT). */
export const INTERRUPTED = 130;

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** The operator who decides the story's approvals; the terminal UI will offer another one. */
async function operatorFor(world: DemoWorld, _headless: boolean): Promise<DemoOperator> {
  return scriptedOperator(world.paths.operatorSocket, world.operatorKey);
}

function interrupted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

export async function runDemo(o: DemoOptions): Promise<number> {
  const started = o.clock.monotonicMs();
  const say = narrator(o.write, o.columns);
  say.line('postern demo: an agent, an operator and a tool contract that changes under a live session.');
  say.line('  setting up a throwaway home, vault and targets…');
  const world = await buildWorld(o.clock);
  const stop = (): void => void world.close({ keep: o.keep });
  o.signal.addEventListener('abort', stop, { once: true });
  try {
    if (o.signal.aborted) return INTERRUPTED;
    await setUp(world, say, o);
    if (o.signal.aborted) return INTERRUPTED;
    if (!o.agent) {
      await serve(world, say, o);
      if (o.headless) await interrupted(o.signal);
      else await operateInTui(world, o.clock, o.signal);
      // Ctrl-C (or q in the terminal UI) is how a served demo ends, as it is for `postern daemon`.
      return 0;
    }
    await tellStory(world, say, o, started);
    if (!o.headless && !o.signal.aborted) {
      say.line('');
      say.line('The daemon keeps running: the terminal UI shows what the story left (2 Activity, 3 Sessions, 4 Grants),');
      say.line('and the snippet above points your own agent at it, to approve its calls by hand.');
      await operateInTui(world, o.clock, o.signal);
    }
    return 0;
  } catch (e) {
    if (o.signal.aborted) return INTERRUPTED;
    if (isPosternError(e) && e.code === 'DEMO_FAILED') {
      for (const l of world.daemonLog.slice(-8)) o.write(`  daemon: ${sanitizeForTerminal(l, 200)}\n`);
    }
    throw e;
  } finally {
    o.signal.removeEventListener('abort', stop);
    await world.close({ keep: o.keep });
    say.line(o.keep ? `kept ${world.paths.home} (remove it when done)` : `stopped the daemon and the targets; removed ${world.paths.home}`);
  }
}

/** Between the phases of a run: an interruption stops it there. */
function stillRunning(o: DemoOptions): void {
  if (o.signal.aborted) throw new PosternError('DEMO_FAILED', 'interrupted');
}

async function setUp(world: DemoWorld, say: Narrator, o: DemoOptions): Promise<void> {
  const t = world.targets;
  say.line(`  home      ${world.paths.home} (0700; ${o.keep ? 'kept afterwards' : 'removed on exit'})`);
  say.line(`  vault     passphrase ${world.passphrase}  (printed because this demo vault is thrown away)`);
  say.line(`            key derivation ${describeKdf(DEMO_KDF.create)}: the cheap test profile, below the production floor, for this throwaway vault only`);
  say.line(`  secrets   ${DEMO_CREDENTIALS.http} (http_bearer), ${DEMO_CREDENTIALS.ssh} (ssh_key): the values stay in the vault`);
  say.line(`  targets   tracker  ${t.httpOrigin}  (in-process HTTP service)`);
  say.line(`            preview  ${t.sshUser}@127.0.0.1:${t.sshPort}  (in-process SSH server, host key ${t.hostKey} pinned)`);
  say.line(`            both append every request they receive to ${world.requestLogFile}`);
  await world.accept(1);
  stillRunning(o);
  say.line('  catalog   #1 accepted: list_tickets r1 (read), create_ticket r1 (write, per-call approval), deploy_preview r1 (write, session approval)');
  stillRunning(o);
  await world.startDaemon();
  say.line(`  daemon    ready; agents connect through ${world.paths.agentSocket}`);
  say.line('');
  say.line('  To point your own agent host at this demo while it runs, use:');
  say.line(`  ${mcpSnippet(o.launch.mcpServer(world.paths.home))}`);
  say.line('');
}

async function serve(world: DemoWorld, say: Narrator, o: DemoOptions): Promise<void> {
  const passFile = join(world.paths.home, 'demo-passphrase');
  await writeFile(passFile, `${world.passphrase}\n`, { mode: 0o600 });
  // The demo vault is a test-profile one: a command opens it only with the switch set (vault/kdf-profile.ts).
  const env = `POSTERN_HOME=${world.paths.home} POSTERN_PASSPHRASE_FILE=${passFile} ${TEST_KDF_SWITCH}=${TEST_KDF_SWITCH_VALUE}`;
  say.line('  No scripted agent (--no-agent): connect yours with the snippet above. Approve its calls from another terminal:');
  say.line(`    ${env} ${process.execPath} ${o.launch.entry} approvals list`);
  say.line(`    ${env} ${process.execPath} ${o.launch.entry} approvals approve ID`);
  say.line('  Press Ctrl-C to stop the demo.');
}

async function tellStory(world: DemoWorld, say: Narrator, o: DemoOptions, started: number): Promise<void> {
  stillRunning(o);
  const agent = await startAgent({ node: process.execPath, cli: o.launch.entry, home: world.paths.home });
  world.onClose(() => agent.close());
  const operator = await operatorFor(world, o.headless);
  world.onClose(() => operator.close());
  say.line('The story. Agent: an MCP client over stdio to `postern mcp`. Operator: this script, over the operator channel.');
  const storyStarted = o.clock.monotonicMs();
  const steps = await runStory({ world, agent, operator, narrate: (s) => say.step(s) });

  const requests = world.log.all();
  say.line('');
  say.line(`Request log (${world.requestLogFile}): everything the targets received.`);
  for (const r of requests) say.line(`  ${describeRequest(r)}`);
  const texts = [...say.transcript, ...agent.received, ...world.daemonLog, await readFile(world.requestLogFile, 'utf8')];
  const leaked = leakedCredentials(world.canaries, texts);
  if (leaked.length > 0) throw new PosternError('DEMO_FAILED', `a form of ${leaked.join(', ')} appeared in the demo's output, the agent's results or a log`);
  say.line('');
  say.line(`Summary: all ${steps.length} steps behaved as the story says, in ${seconds(o.clock.monotonicMs() - started)} (set-up ${seconds(storyStarted - started)}). ` +
    `${requests.length} requests reached the targets;`);
  say.line(`no form of ${DEMO_CREDENTIALS.http} or ${DEMO_CREDENTIALS.ssh} appeared in anything the agent received, the logs, or this output.`);
  if (o.keep) say.line(`Inspect the journals: POSTERN_HOME=${world.paths.home} ${process.execPath} ${o.launch.entry} audit activity`);
}
