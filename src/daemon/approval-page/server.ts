/**
 * The approval page's own listener (never the agent's HTTP listener): static
 * files, pairing, the page's state, its event stream and decisions.
 *
 *   GET  /  /app.js  /app.css     the page (static; strict CSP, no inline script)
 *   POST /api/pair   {code}       a one-time code → a device cookie and key
 *   GET  /api/state               cards, activity, the page token   (device)
 *   GET  /api/events              "changed" pings (an event stream)  (device)
 *   POST /api/decide {card_id, digest, nonce, verdict, scope?, reason?, seen?}  (device + page token)
 *   GET  /manifest.webmanifest  /icon.svg  /icon-192.png  /icon-512.png   (static: installable as an app)
 *
 * Invariants: every request passes the gate first (gate.ts: Host, Origin,
 * Sec-Fetch-Site, method, content type); every answer carries PAGE_HEADERS;
 * a device is proven by its cookie (HttpOnly, SameSite=Strict, Secure under
 * TLS) and its key header together (devices.ts says why both); a decision
 * also needs the page token header, a nonce issued
 * for that card and device (consumed by its first use), the card's digest,
 * and a card that is not stale, and then goes through the approval queue's
 * own `decide` — the path a TUI or CLI decision takes — attributed to
 * `device:<id>`; pairing and decisions are rate-limited; a revoked device is
 * refused at its next request and its event streams are closed.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { z } from 'zod';
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { Clock } from '../../clock/index.js';
import type { PairedDevice } from '../../home/approval-devices.js';
import type { ActivityView } from '../../protocol/operator/index.js';
import { isPosternError, PosternError, type ErrorCode } from '../../rules/errors.js';
import type { EventBus } from '../events.js';
import { readBody } from '../http/node-bridge.js';
import { DEVICE_COOKIE, DEVICE_HEADER, type DeviceRegistry } from './devices.js';
import { judgePageRequest, PAGE_HEADERS, pageOrigins, type PageAddress } from './gate.js';
import { DecisionNonces } from './nonces.js';
import { RateLimit } from './rate.js';
import { pageActivity, pageCard, type PageState } from './view.js';

const MAX_BODY = 16 * 1024;
export const PAGE_TOKEN_HEADER = 'x-postern-page';

export interface ApprovalPageOptions {
  readonly bind: string;
  readonly port: number;
  readonly tls: { readonly key: string; readonly cert: string } | null;
  readonly clock: Clock;
  readonly queue: ApprovalQueue;
  readonly bus: EventBus;
  readonly devices: DeviceRegistry;
  readonly activity: () => ActivityView[];
  readonly journal: (type: 'device_paired', data: Record<string, unknown>) => void;
}

export interface ApprovalPageEndpoint {
  readonly url: string;
  readonly port: number;
  /** Closes the event streams of a device that was just revoked. */
  dropDevice(id: string): void;
  close(): Promise<void>;
}

const STATIC: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
  '/manifest.webmanifest': { file: 'manifest.webmanifest', type: 'application/manifest+json; charset=utf-8' },
  '/icon.svg': { file: 'icon.svg', type: 'image/svg+xml' },
  '/icon-192.png': { file: 'icon-192.png', type: 'image/png' },
  '/icon-512.png': { file: 'icon-512.png', type: 'image/png' },
};

const PairSchema = z.strictObject({ code: z.string().min(1).max(64) });
const DecideSchema = z.strictObject({
  card_id: z.string().min(1).max(200),
  digest: z.string().min(1).max(128),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  verdict: z.enum(['approve', 'deny']),
  scope: z.enum(['once', 'session']).optional(),
  reason: z.string().max(500).nullable().optional(),
  /** The presentation the page had in view whole (presentation.ts); the queue checks it. */
  seen: z.strictObject({ presentation: z.string().regex(/^[0-9a-f]{64}$/) }).optional(),
});

const STATUS: Partial<Record<ErrorCode, number>> = {
  DEVICE_UNPAIRED: 401, PAIRING_REFUSED: 403, PAGE_RATE_LIMITED: 429, DECISION_STALE: 409, DECISION_REPLAYED: 409,
  DECISION_NONCE_INVALID: 409, APPROVAL_MISMATCH: 409, APPROVAL_UNSEEN: 409, APPROVAL_NOT_FOUND: 410, USAGE: 400, PAGE_REFUSED: 403,
};

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

function loadStatic(): Map<string, Buffer> {
  const dir = new URL('./static/', import.meta.url);
  return new Map(Object.values(STATIC).map((s) => [s.file, readFileSync(new URL(s.file, dir))]));
}

/** One JSON answer, with the page's headers. */
function send(res: ServerResponse, status: number, body: unknown, extra: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, { ...PAGE_HEADERS, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': String(Buffer.byteLength(text)), ...extra });
  res.end(text);
}

/** A refusal as the page reads it: its stable code and one line; anything else is INTERNAL, never a stack. */
function fail(res: ServerResponse, e: unknown): void {
  const err = isPosternError(e) ? e : new PosternError('INTERNAL', 'the approval page failed to handle the request');
  send(res, STATUS[err.code] ?? 500, { error: { code: err.code, message: err.message.slice(0, 500) } });
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const body = await readBody(req, MAX_BODY);
  if (body.kind === 'oversized') throw new PosternError('USAGE', 'the request body is too large');
  try {
    return JSON.parse(body.bytes.toString('utf8'));
  } catch {
    throw new PosternError('USAGE', 'the request body is not JSON');
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** What the page's routes share: the devices' proofs, the nonces, the rate limits, the stale marks and the open event streams. */
class PageRoutes {
  /** Where the listener is (its port once bound): the gate checks Host and Origin against it. */
  address: PageAddress;
  readonly streams = new Set<{ device: string; res: ServerResponse }>();
  readonly #o: ApprovalPageOptions;
  readonly #files = loadStatic();
  readonly #runKey = randomBytes(32);
  readonly #nonces: DecisionNonces;
  readonly #pairing: RateLimit;
  readonly #deciding: RateLimit;
  readonly #stale = new Map<string, string>();

  constructor(o: ApprovalPageOptions, scheme: 'http' | 'https') {
    this.#o = o;
    this.address = { bind: o.bind, port: o.port, scheme };
    this.#nonces = new DecisionNonces(o.clock, { ttlMs: 24 * 3600_000 });
    this.#pairing = new RateLimit(o.clock, { max: 10, windowMs: 60_000 });
    this.#deciding = new RateLimit(o.clock, { max: 60, windowMs: 60_000 });
  }

  /** Marks cards gone stale and pings every open page when what it shows may have changed; returns the unsubscribe. */
  follow(bus: EventBus): () => void {
    return bus.subscribe((env) => {
      const e = env.event;
      if (e.type === 'approval.stale') this.#stale.set(e.id, e.reason);
      if (e.type === 'approval.resolved') this.#stale.delete(e.id);
      if (e.type === 'approval.added' || e.type === 'approval.resolved' || e.type === 'approval.stale' || e.type === 'activity' || e.type === 'daemon.locked') {
        for (const st of this.streams) st.res.write(`data: ${env.seq}\n\n`);
      }
    });
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const gate = judgePageRequest({ method: req.method ?? '', host: header(req, 'host'), origin: header(req, 'origin'), secFetchSite: header(req, 'sec-fetch-site'), contentType: header(req, 'content-type') }, this.address);
    if (gate.kind === 'refuse') return send(res, gate.status, { error: { code: gate.code, message: gate.message } });
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const asset = STATIC[path === '/index.html' ? '/' : path];
    if (gate.method === 'GET' && asset !== undefined) {
      const body = this.#files.get(asset.file) ?? Buffer.alloc(0);
      res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': asset.type, 'Content-Length': String(body.length) });
      res.end(body);
      return;
    }
    switch (`${gate.method} ${path}`) {
      case 'POST /api/pair':
        return this.#pair(req, res);
      case 'GET /api/state':
        return send(res, 200, this.#state(this.#device(req)));
      case 'GET /api/events':
        return this.#events(req, res, this.#device(req));
      case 'POST /api/decide':
        return send(res, 200, { decision: await this.#decide(req, this.#device(req)) });
      default:
        send(res, 404, { error: { code: 'PAGE_REFUSED', message: 'nothing is served here' } });
    }
  }

  #pageToken(d: PairedDevice): string {
    return createHmac('sha256', this.#runKey).update(`page token\n${d.id}`).digest('hex');
  }

  #device(req: IncomingMessage): PairedDevice {
    const key = req.headers[DEVICE_HEADER];
    const d = this.#o.devices.authenticate(cookieOf(req, DEVICE_COOKIE), Array.isArray(key) ? undefined : key);
    if (d === null) throw new PosternError('DEVICE_UNPAIRED', 'this browser is not a paired device (or it was revoked): pair it with `postern approvals pair`');
    return d;
  }

  #state(d: PairedDevice): PageState {
    const o = this.#o;
    return {
      now: o.clock.now().toISOString(),
      device: { id: d.id, name: d.name },
      csrf: this.#pageToken(d),
      cards: o.queue.list().map((c) => pageCard(c, this.#stale.get(c.id), this.#nonces.issue(d.id, c.id, c.call_digest))),
      activity: o.activity().slice(0, 20).map(pageActivity),
    };
  }

  async #decide(req: IncomingMessage, d: PairedDevice): Promise<unknown> {
    const { queue } = this.#o;
    if (req.headers[PAGE_TOKEN_HEADER] !== this.#pageToken(d)) throw new PosternError('PAGE_REFUSED', 'the request does not carry this page\'s token: reload the page');
    if (!this.#deciding.take(d.id)) throw new PosternError('PAGE_RATE_LIMITED', 'too many decisions from this device in a minute');
    const r = DecideSchema.safeParse(await readJson(req));
    if (!r.success) throw new PosternError('USAGE', 'the decision is not {card_id, digest, nonce, verdict}');
    const p = r.data;
    const n = this.#nonces.take(p.nonce, d.id, p.card_id);
    if (n.kind === 'replayed') throw new PosternError('DECISION_REPLAYED', 'this decision was already sent once; nothing was decided again');
    if (n.kind === 'invalid') throw new PosternError('DECISION_NONCE_INVALID', n.why);
    const card = queue.get(p.card_id);
    if (card === undefined) throw new PosternError('APPROVAL_NOT_FOUND', 'the card is no longer pending (decided, timed out or withdrawn)');
    if (p.digest !== card.call_digest || n.digest !== card.call_digest) throw new PosternError('APPROVAL_MISMATCH', 'the decision was made on a different call; nothing was decided');
    const by = `device:${d.id}`;
    if (p.verdict === 'deny') return queue.decide(card.id, { verdict: 'deny', reason: p.reason ?? null }, by);
    const why = this.#stale.get(card.id);
    if (why !== undefined) throw new PosternError('DECISION_STALE', `the contract changed while the call waited: ${why.slice(0, 200)}`);
    const view = pageCard(card, undefined, p.nonce);
    const scope = p.scope ?? 'once';
    if (scope === 'session' && !view.approve.session && view.approve.when_seen?.session !== true) throw new PosternError('USAGE', view.approve.why ?? 'session approval is not offered for this card');
    return queue.decide(card.id, { verdict: 'approve', scope, call_digest: p.digest, ...(p.seen === undefined ? {} : { seen: p.seen }) }, by);
  }

  async #pair(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { devices, journal } = this.#o;
    if (!this.#pairing.take(req.socket.remoteAddress ?? '?')) throw new PosternError('PAGE_RATE_LIMITED', 'too many pairing attempts from this address in a minute');
    const r = PairSchema.safeParse(await readJson(req));
    if (!r.success) throw new PosternError('USAGE', 'the pairing request is not {code}');
    const { device: d, cookie, header: key } = await devices.redeem(r.data.code);
    journal('device_paired', { device: d.id, name: d.name, sequence: devices.sequence });
    const secure = this.address.scheme === 'https' ? '; Secure' : '';
    send(res, 200, { device: { id: d.id, name: d.name }, key }, { 'Set-Cookie': `${DEVICE_COOKIE}=${cookie}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000${secure}` });
  }

  #events(req: IncomingMessage, res: ServerResponse, d: PairedDevice): void {
    res.writeHead(200, { ...PAGE_HEADERS, 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'keep-alive' });
    res.write('retry: 2000\n\n');
    const st = { device: d.id, res };
    this.streams.add(st);
    req.once('close', () => this.streams.delete(st));
  }
}

export async function startApprovalPage(o: ApprovalPageOptions): Promise<ApprovalPageEndpoint> {
  const scheme = o.tls === null ? 'http' : 'https';
  const routes = new PageRoutes(o, scheme);
  const unsubscribe = routes.follow(o.bus);
  const sockets = new Set<Socket>();
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    routes.handle(req, res).catch((e: unknown) => fail(res, e));
  };
  const server: Server = o.tls === null ? createHttpServer(onRequest) : createHttpsServer({ key: o.tls.key, cert: o.tls.cert }, onRequest);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e: NodeJS.ErrnoException) => reject(new PosternError('PAGE_LISTEN_FAILED', `the approval page cannot listen on ${o.bind}:${o.port} (${e.code ?? 'error'}): pick another port with \`postern approvals page enable --port N\``)));
      server.listen(o.port, o.bind, () => resolve());
    });
  } catch (e) {
    unsubscribe();
    throw e;
  }
  const port = (server.address() as AddressInfo).port;
  routes.address = { bind: o.bind, port, scheme };
  const url = pageOrigins(routes.address)[0] ?? `${scheme}://${o.bind}:${port}`;
  return {
    url: `${url}/`,
    port,
    dropDevice(id) {
      for (const st of routes.streams) {
        if (st.device !== id) continue;
        routes.streams.delete(st);
        st.res.end();
      }
    },
    async close() {
      unsubscribe();
      for (const st of routes.streams) st.res.end();
      routes.streams.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const sock of sockets) sock.destroy();
      await closed;
    },
  };
}
