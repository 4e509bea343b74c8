/**
 * Whether the daemon opens its HTTP listener, and the files that go with it.
 * Open only when config.yaml enables it AND `mcp-http.authorized.json`
 * verifies for that port with the vault's key (src/home/http-authorization.ts);
 * otherwise the daemon runs without it and says why (log and sessions
 * journal). A listener that is authorized but cannot bind fails the start,
 * like every other start-up failure (all or nothing).
 *
 * Files: the token (`run/mcp-http.token`, token.ts) and `run/mcp-http.json`
 * (src/home/http-listener-info.ts), written once the port is bound and
 * removed when the listener closes; a stale one from an earlier daemon is
 * removed at start.
 */
import type { HomePaths } from '../../home/paths.js';
import { judgeHttpAuthorization, readHttpAuthorization } from '../../home/http-authorization.js';
import { removeListenerInfo, writeListenerInfo } from '../../home/http-listener-info.js';
import type { DaemonConfig } from '../services/config.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { startHttpListener, type HttpEndpoint } from './listener.js';
import { ensureToken } from './token.js';

interface HttpStartDeps {
  readonly paths: HomePaths;
  readonly svc: Services;
  readonly config: DaemonConfig;
  /** The vault's catalog-mac key (the authorization's MAC key). */
  readonly key: Uint8Array;
  readonly hooks: { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void };
  readonly log: (line: string) => void;
  readonly journalEvent: (session: string | null, type: 'http_listener', data: Record<string, unknown>) => void;
}

export async function startHttpIfAuthorized(d: HttpStartDeps): Promise<HttpEndpoint | null> {
  await removeListenerInfo(d.paths);
  const c = d.config.mcp_http;
  if (!c.enabled) return null;
  const verdict = judgeHttpAuthorization(d.key, await readHttpAuthorization(d.paths), c.port);
  if (verdict.kind === 'refused') {
    d.log(`HTTP listener NOT started: ${verdict.reason}; run \`postern http enable\` to authorize it`);
    d.journalEvent(null, 'http_listener', { state: 'refused', port: c.port, reason: verdict.reason });
    return null;
  }
  const { token, created } = await ensureToken(d.paths.mcpHttpToken);
  const endpoint = await startHttpListener(d.svc, { port: c.port, maxSessions: c.max_sessions, token, clock: d.svc.clock, hooks: d.hooks });
  try {
    await writeListenerInfo(d.paths, { url: endpoint.url, token_file: d.paths.mcpHttpToken, pid: process.pid });
  } catch (e) {
    await endpoint.close();
    throw e;
  }
  d.log(`HTTP listener on ${endpoint.url} (bearer token in ${d.paths.mcpHttpToken}${created ? ', new' : ''})`);
  d.journalEvent(null, 'http_listener', { state: 'started', url: endpoint.url, max_sessions: c.max_sessions, token_created: created });
  return {
    ...endpoint,
    async close() {
      await endpoint.close();
      await removeListenerInfo(d.paths);
    },
  };
}
