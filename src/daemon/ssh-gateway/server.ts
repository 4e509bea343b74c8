/**
 * The SSH gateway's server (ssh2's Server) on 127.0.0.1: it terminates the
 * agent's `ssh` with Postern's own host key, lets in only the gateway's client
 * key, and turns each exec request into a call (exec-call.ts). Everything
 * else a client may ask is refused before any destination is contacted:
 * an interactive shell, a subsystem (sftp too), port forwarding either way,
 * Unix-socket forwarding, and — for the whole session, with one line on the
 * client's stderr and exit status 1 — a PTY, agent forwarding or X11
 * forwarding asked for before the command.
 *
 * The target is the one the client names with `SetEnv POSTERN_TARGET=<name>`
 * (what `postern setup ssh` writes), else its login user name. Each
 * connection is one agent session (journaled with transport `ssh-gateway`).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ssh2 } from '../../libraries.js';
import type { AuthContext, Connection, ParsedKey, ServerChannel, Session } from 'ssh2';
import { PosternError } from '../../rules/errors.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { refusalLine, runGatewayExec } from './exec-call.js';
import { describePeer, findPeerProcess, type PeerProcess } from './peer-process.js';

interface GatewayServerOptions {
  readonly svc: Services;
  /** The gateway's host key (OpenSSH private key text). */
  readonly hostKey: string;
  /** The one client key allowed in (OpenSSH public key line). */
  readonly clientKey: string;
  readonly hooks: { sessionStarted(s: SessionInfo): void; sessionEnded(s: SessionInfo): void };
  readonly log: (line: string) => void;
}

export interface GatewayServer {
  readonly port: number;
  close(): Promise<void>;
}

function parsedKey(text: string): ParsedKey {
  const k = ssh2().utils.parseKey(text);
  if (k instanceof Error || Array.isArray(k)) throw new PosternError('INPUT_INVALID', 'the SSH gateway key file is not a single valid key');
  return k;
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

function authenticate(ctx: AuthContext, allowed: ParsedKey): void {
  if (ctx.method !== 'publickey') return ctx.reject(['publickey']);
  const ok = ctx.key.algo === allowed.type && sameBytes(ctx.key.data, allowed.getPublicSSH());
  if (!ok) return ctx.reject(['publickey']);
  if (ctx.signature !== undefined && allowed.verify(ctx.blob ?? Buffer.alloc(0), ctx.signature, ctx.hashAlgo) !== true) return ctx.reject(['publickey']);
  ctx.accept();
}

/** A request the gateway does not serve, answered on a channel so the client sees why. */
function refuseOnChannel(ch: ServerChannel, what: string): void {
  ch.stderr.write(refusalLine('GATEWAY_REFUSED', `${what} is not allowed through Postern's SSH gateway; only the commands the catalog names run (docs/ssh-gateway.md); nothing was sent`));
  ch.exit(1);
  ch.end();
}

interface SessionAsks {
  target: string | null;
  /** Something asked for before the command that the gateway refuses (the whole session is refused). */
  refused: string | null;
}

function serveSession(o: GatewayServerOptions, agent: SessionInfo, login: string, peer: Promise<PeerProcess>, session: Session): void {
  const asks: SessionAsks = { target: null, refused: null };
  const deny = (what: string) => (_accept: unknown, reject: (() => void) | undefined) => {
    asks.refused ??= what;
    reject?.();
  };
  session.on('env', (accept, reject, info) => {
    if (info.key === 'POSTERN_TARGET') asks.target = info.val;
    // Other variables are not passed on (the destination's environment is not the agent's to set).
    if (info.key === 'POSTERN_TARGET') accept?.();
    else reject?.();
  });
  session.on('pty', deny('a terminal (PTY)'));
  session.on('x11', deny('X11 forwarding'));
  session.on('auth-agent', deny('agent forwarding'));
  session.on('shell', (accept) => refuseOn(accept(), 'an interactive shell'));
  session.on('subsystem', (accept, _reject, info) => refuseOn(accept(), `the subsystem ${JSON.stringify(info.name)}`));
  session.on('sftp', (_accept, reject) => reject?.());
  session.on('exec', (accept, _reject, info) => {
    const ch = accept();
    if (asks.refused !== null) return refuseOn(ch, asks.refused);
    const target = asks.target ?? login;
    void peer.then((p) => {
      if (p.found) agent.pid = p.pid;
      return runGatewayExec(o.svc, agent, { target, exec: info.command }, describePeer(p), ch);
    });
  });
  const refuseOn = (ch: ServerChannel, what: string): void => {
    o.log(`ssh-gateway: refused ${what} (session ${agent.id.slice(0, 8)})`);
    refuseOnChannel(ch, what);
  };
}

function serveClient(o: GatewayServerOptions, allowed: ParsedKey, client: Connection, software: string, peer: Promise<PeerProcess>): void {
  let login = '';
  let agent: SessionInfo | null = null;
  client.on('error', () => undefined);
  client.on('authentication', (ctx) => {
    login = ctx.username;
    authenticate(ctx, allowed);
  });
  client.on('tcpip', (_accept, reject) => reject());
  client.on('openssh.streamlocal', (_accept, reject) => reject());
  client.on('request', (_accept, reject) => reject?.());
  client.on('ready', () => {
    const s: SessionInfo = {
      id: randomUUID(),
      clientName: 'ssh-gateway',
      clientVersion: software.slice(0, 64),
      protocolVersion: null,
      pid: null,
      runId: null,
      agentRelease: null,
      seen: new Map(),
      listedToolset: null,
    };
    agent = s;
    o.hooks.sessionStarted(s);
    client.on('session', (accept) => serveSession(o, s, login, peer, accept()));
  });
  client.on('close', () => {
    if (agent !== null) o.hooks.sessionEnded(agent);
  });
}

/** Starts the gateway on 127.0.0.1:`port` (0: any free port). */
export async function startGatewayServer(o: GatewayServerOptions, port: number): Promise<GatewayServer> {
  const allowed = parsedKey(o.clientKey);
  const connections = new Set<Connection>();
  let bound = port;
  const server = new (ssh2().Server)({ hostKeys: [o.hostKey], ident: 'Postern-gateway' }, (client, info) => {
    connections.add(client);
    client.on('close', () => connections.delete(client));
    // Looked up at once, while the client's connection is surely there; the card shows it as context.
    serveClient(o, allowed, client, info.header.versions.software, findPeerProcess(info.port, bound));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => reject(new PosternError('GATEWAY_LISTEN_FAILED', `the SSH gateway cannot listen on 127.0.0.1:${port} (${e.code ?? 'error'})`, { cause: e })));
    server.listen(port, '127.0.0.1', () => resolve());
  });
  server.on('error', () => undefined);
  bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of connections) c.end();
        server.close(() => resolve());
      }),
  };
}
