/**
 * Where Postern keeps its files. `POSTERN_HOME` overrides `~/.postern`.
 * Every process (CLI, daemon, MCP shim) derives paths from here so there is
 * exactly one layout.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

export interface HomePaths {
  readonly home: string;
  readonly vault: string;
  readonly catalog: string;
  /** The operator-accepted copy of the catalog the daemon actually uses. */
  readonly acceptedCatalog: string;
  /** Digest + MAC of the accepted catalog. */
  readonly acceptedRecord: string;
  /** Append-only log of catalog acceptances. */
  readonly catalogHistory: string;
  /** Every accepted catalog text, by digest (`<digest>.yaml`): what an audit bundle carries for older revisions. */
  readonly catalogArchive: string;
  readonly journalDir: string;
  /** The authenticated anchor of both journals (outside them; docs/audit.md). */
  readonly anchor: string;
  /** Signed checkpoints of both journals, one a line (docs/audit.md, "Signed checkpoints"). */
  readonly checkpoints: string;
  readonly runDir: string;
  /** Daemon settings (optional). */
  readonly config: string;
  readonly agentSocket: string;
  readonly operatorSocket: string;
  /** One daemon per home. */
  readonly daemonLock: string;
  /** The operator's MAC'd authorization of the HTTP listener (src/home/http-authorization.ts). */
  readonly mcpHttpAuthorization: string;
  /** The HTTP listener's bearer token (0600, in the 0700 run directory). */
  readonly mcpHttpToken: string;
  /** Where a running daemon's HTTP listener says its URL (written at start, removed at stop). */
  readonly mcpHttpInfo: string;
  /** The operator's MAC'd authorization of the approval page: its port, address and webhook (src/home/approval-page-authorization.ts). */
  readonly approvalPageAuthorization: string;
  /** The devices paired with the approval page, MAC'd (src/home/approval-devices.ts). */
  readonly approvalDevices: string;
  /** Where a running daemon's approval page says its URL (written at start, removed at stop). */
  readonly approvalPageInfo: string;
  /** The write-ahead record of a change of several files, while it is being made (src/home/change-record.ts). */
  readonly changeRecord: string;
  /** Secrets received but not yet saved to the vault, encrypted (src/home/pending-secrets.ts). */
  readonly pendingSecrets: string;
  /** The operator's MAC'd list of other OS users allowed on the shared agent socket (src/home/agent-users.ts). */
  readonly agentUsers: string;
  /** Beside the home, not in it (0711): the directory of the shared agent socket other allowed users reach (docs/agent-users.md). */
  readonly sharedAgentDir: string;
  /** The agent socket other allowed users connect to (0666; every peer's credentials are checked). */
  readonly sharedAgentSocket: string;
}

export function resolveHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['POSTERN_HOME'];
  if (fromEnv !== undefined && fromEnv !== '') return resolve(fromEnv);
  return join(homedir(), '.postern');
}

export function homePaths(home: string): HomePaths {
  return {
    home,
    vault: join(home, 'vault.pvlt'),
    catalog: join(home, 'catalog.yaml'),
    acceptedCatalog: join(home, 'catalog.accepted.yaml'),
    acceptedRecord: join(home, 'catalog.accepted.json'),
    catalogHistory: join(home, 'catalog.history.jsonl'),
    catalogArchive: join(home, 'catalog.archive'),
    journalDir: join(home, 'journal'),
    anchor: join(home, 'journal.anchor'),
    checkpoints: join(home, 'journal.checkpoints.jsonl'),
    runDir: join(home, 'run'),
    config: join(home, 'config.yaml'),
    agentSocket: join(home, 'run', 'agent.sock'),
    operatorSocket: join(home, 'run', 'operator.sock'),
    daemonLock: join(home, 'run', 'daemon.lock'),
    mcpHttpAuthorization: join(home, 'mcp-http.authorized.json'),
    mcpHttpToken: join(home, 'run', 'mcp-http.token'),
    mcpHttpInfo: join(home, 'run', 'mcp-http.json'),
    approvalPageAuthorization: join(home, 'approval-page.authorized.json'),
    approvalDevices: join(home, 'approval-devices.json'),
    approvalPageInfo: join(home, 'run', 'approval-page.json'),
    changeRecord: join(home, 'change.pending'),
    pendingSecrets: join(home, 'secrets.pending'),
    agentUsers: join(home, 'agents.allowed.json'),
    sharedAgentDir: `${home}-agents`,
    sharedAgentSocket: join(`${home}-agents`, 'agent.sock'),
  };
}
