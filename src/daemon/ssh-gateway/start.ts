/**
 * Whether the daemon opens the SSH gateway: only when config.yaml enables it
 * AND `ssh-gateway.authorized.json` verifies, with the vault's key, for that
 * port and the gateway's key files (src/home/ssh-gateway-files.ts). Otherwise
 * the daemon runs without it and says why (log and sessions journal), like the
 * HTTP listener. A gateway that is authorized but cannot bind fails the start.
 * `run/ssh-gateway.json` names the bound port while it runs.
 */
import type { HomePaths } from '../../home/paths.js';
import { ensureGatewayKeys, judgeGatewayAuthorization, readGatewayAuthorization, removeGatewayInfo, writeGatewayInfo } from '../../home/ssh-gateway-files.js';
import type { DaemonConfig } from '../services/config.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { startGatewayServer, type GatewayServer } from './server.js';

interface GatewayStartDeps {
  readonly paths: HomePaths;
  readonly svc: Services;
  readonly config: DaemonConfig;
  /** The vault's catalog-mac key (the authorization's MAC key). */
  readonly key: Uint8Array;
  readonly hooks: { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void };
  readonly log: (line: string) => void;
  readonly journalEvent: (session: string | null, type: 'ssh_gateway', data: Record<string, unknown>) => void;
}

export async function startSshGatewayIfAuthorized(d: GatewayStartDeps): Promise<GatewayServer | null> {
  await removeGatewayInfo(d.paths);
  const c = d.config.ssh_gateway;
  if (!c.enabled) return null;
  const keys = await ensureGatewayKeys(d.paths);
  const verdict = judgeGatewayAuthorization(d.key, await readGatewayAuthorization(d.paths), c.port, keys);
  if (verdict.kind === 'refused') {
    d.log(`SSH gateway NOT started: ${verdict.reason}; run \`postern ssh-gateway enable\` to authorize it`);
    d.journalEvent(null, 'ssh_gateway', { state: 'refused', port: c.port, reason: verdict.reason });
    return null;
  }
  const server = await startGatewayServer({ svc: d.svc, hostKey: keys.hostKey, clientKey: keys.clientPublic, hooks: d.hooks, log: d.log }, c.port);
  try {
    await writeGatewayInfo(d.paths, { port: server.port, pid: process.pid });
  } catch (e) {
    await server.close();
    throw e;
  }
  d.log(`SSH gateway on 127.0.0.1:${server.port} (client setup: postern setup ssh)`);
  d.journalEvent(null, 'ssh_gateway', { state: 'started', port: server.port });
  return {
    port: server.port,
    async close() {
      await server.close();
      await removeGatewayInfo(d.paths);
    },
  };
}
