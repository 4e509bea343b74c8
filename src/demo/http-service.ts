/**
 * The demo's HTTP target: a tiny ticket tracker on 127.0.0.1 that wants a
 * bearer token. Routes: `GET /tickets` (the list, plus a deliberately leaky
 * `debug.authorization` echo of the header it received — the agent must see
 * it redacted) and `POST /tickets` (creates one, 201). Every request is
 * appended to the request log before it is answered, with `auth` saying
 * whether the token matched (never the token itself).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { timingSafeEqual } from 'node:crypto';
import type { RequestAuth, RequestLog } from './request-log.js';

interface DemoHttpService {
  readonly origin: string;
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

function authOf(header: string | undefined, token: Buffer): RequestAuth {
  if (header === undefined) return 'missing';
  const got = Buffer.from(header, 'utf8');
  const want = Buffer.concat([Buffer.from('Bearer ', 'utf8'), token]);
  return got.length === want.length && timingSafeEqual(got, want) ? 'ok' : 'wrong';
}

function send(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

export async function startHttpService(log: RequestLog, token: Uint8Array): Promise<DemoHttpService> {
  const tokenBytes = Buffer.from(token);
  const tickets: { id: string; title: string; team: string | null }[] = [
    { id: 'T-1', title: 'Login page times out', team: null },
    { id: 'T-2', title: 'Preview of fix-login is stale', team: null },
  ];
  const sockets = new Set<Socket>();

  const handle = (req: IncomingMessage, res: ServerResponse, body: Buffer): void => {
    const path = new URL(req.url ?? '/', 'http://demo').pathname;
    const auth = authOf(req.headers.authorization, tokenBytes);
    const key = req.headers['idempotency-key'];
    log.append({ target: 'http', method: req.method ?? '', path, auth, idempotencyKey: typeof key === 'string' ? key : null, body: body.toString('utf8').slice(0, 500) });
    if (auth !== 'ok') return send(res, 401, { error: 'unauthorized' });
    if (path === '/tickets' && req.method === 'GET') {
      // A careless service echoing its own credential: Postern redacts it before the agent sees it.
      return send(res, 200, { tickets, debug: { authorization: req.headers.authorization } });
    }
    if (path === '/tickets' && req.method === 'POST') {
      let input: { title?: unknown; team?: unknown };
      try {
        input = JSON.parse(body.toString('utf8')) as { title?: unknown; team?: unknown };
      } catch {
        return send(res, 400, { error: 'the body is not JSON' });
      }
      const ticket = { id: `T-${tickets.length + 1}`, title: typeof input.title === 'string' ? input.title : '', team: typeof input.team === 'string' ? input.team : null };
      tickets.push(ticket);
      return send(res, 201, { ticket });
    }
    return send(res, 404, { error: 'no such route' });
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closing: Promise<void> | undefined;
  return {
    origin: `http://127.0.0.1:${port}`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
        tokenBytes.fill(0);
      });
      return closing;
    },
  };
}
