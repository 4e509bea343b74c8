/**
 * The approval page in a real browser (Debian's Chromium via playwright-core)
 * against the real daemon, its MCP shim and the CLI: the page is enabled with
 * the passphrase, a browser is paired with the one-time code `postern
 * approvals pair` prints (the code works once), and from it the operator
 * approves once, denies with a reason and grants a session — each decision
 * the daemon's own, attributed to the device in the journal. A decision sent
 * again is refused DECISION_REPLAYED; a card whose contract changes while it
 * is open is marked stale and cannot be approved (DECISION_STALE); the
 * hostile display corpus shows escaped, row for row the strings `postern
 * approvals show` prints and the TUI draws (the one card view); a revoked device is back at
 * the pairing form at once. The webhook is told the tool and a link, never
 * the arguments (a canary in every call's arguments never reaches it), and
 * the desktop notice (a notify-send of the test's own on the daemon's PATH)
 * names the tool only.
 *
 * Skips with a reason when /usr/bin/chromium is absent, unless
 * POSTERN_REQUIRE_CHROMIUM=1. POSTERN_WRITE_SCREENSHOT=1 also writes the
 * README's screenshot (docs/img/approval-page.png).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { Page } from 'playwright-core';
import { presentation } from '../../src/protocol/operator/index.js';
import { cardRows } from '../../src/tui/card.js';
import { terminalLines } from '../../src/cli/context.js';
import { PIPED_COLUMNS } from '../helpers/cli.js';
import { chromiumSkip, launchChromium, type Browser } from '../helpers/chromium.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { startFakeHttp, type FakeHttpServer } from '../helpers/fake-http.js';
import { HOSTILE as H } from '../helpers/hostile-text.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { lootOrigin, rawRequest, sendSigned } from '../helpers/page-device.js';

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const skip = chromiumSkip();
const key = (): string => `k-${randomBytes(6).toString('hex')}`;
const CANARY = `canary-arg-${randomBytes(8).toString('hex')}`;
const TOKEN = canary('page-token');
/** Characters that must never reach the page's text raw: C0/C1 controls, bidi controls, zero-width and other invisible ones. */
// eslint-disable-next-line no-control-regex, no-misleading-character-class -- these are exactly the characters looked for
const RAW_HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u{e0000}-\u{e007f}\u{e0100}-\u{e01ef}]/u;

describe('the approval page in Chromium', { skip }, () => {
  let inst: Installation;
  let target: FakeHttpServer;
  let hook: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;
  let browser: Browser;
  let page: Page;
  let url: string;
  let deviceId: string;
  let notices: string;
  const originalPath = process.env['PATH'] ?? '/usr/bin:/bin';
  let catalog: { targets: Record<string, unknown>; tools: Record<string, unknown> };
  const http = (path: string, body: Record<string, unknown>) => ({ target: 'local', method: 'POST', path, body });
  const str = (max: number) => ({ type: 'string', maxLength: max });
  const tool = (approval: string, prop: string, max: number, revisions?: unknown[]) => ({
    description: `A tool with ${prop}.`,
    effect: 'write',
    approval,
    revisions: revisions ?? [{ revision: 1, input: { type: 'object', properties: { [prop]: str(max) }, required: [prop] }, http: http('/echo', { [prop]: `{${prop}}` }) }],
  });

  /** A call that keeps waiting for its approval (it sends a progress token). */
  const waiting = (c: Client, name: string, args: Record<string, unknown>): Promise<Result> =>
    c.callTool({ name, arguments: { ...args, idempotency_key: key() } }, { onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 120_000 }) as Promise<Result>;
  const cardOnPage = (id: string): string => `[data-card-id="${id}"]`;
  const rowsOnPage = (id: string): Promise<[string, string][]> =>
    page.$$eval(`${cardOnPage(id)} .rows .row`, (rows) => rows.map((r) => [r.querySelector('.label')?.textContent ?? '', r.querySelector('.value')?.textContent ?? ''] as [string, string]));
  /** Sends a decision from the page's own origin, signed by its device as its script would (for what a tampered or replayed page sends). */
  const sendFromPage = (body: string): Promise<{ status: number; json: { error?: { code: string } } }> => sendSigned(page, 'POST', '/api/decide', JSON.parse(body));

  before(async () => {
    hook = await startFakeHttp();
    hook.route('/topic', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    ({ http: target, inst } = await httpFixture({
      token: TOKEN,
      config: { approval_timeout_seconds: 120, approval_wait_without_progress_seconds: 1 },
      catalog: (targets) => (catalog = { targets, tools: { create_issue: tool('per-call', 'title', 12_000), add_label: tool('session', 'label', 100), rename: tool('per-call', 'name', 100) } }),
      start: false,
    }));
    // A notify-send of our own on the daemon's PATH, which writes down each notice it is given (one argument a line).
    notices = join(inst.sb.dir, 'notices.log');
    await mkdir(join(inst.sb.dir, 'bin'));
    await inst.sb.file('bin/notify-send', `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done >> '${notices}'\n`, 0o755);
    process.env['PATH'] = `${join(inst.sb.dir, 'bin')}:${originalPath}`;
    const enabled = await inst.sb.run(['approvals', 'page', 'enable', '--port', '0', '--webhook', `${hook.origin}/topic`, '--passphrase-file', inst.passFile]);
    assert.equal(enabled.code, 0, enabled.stderr);
    assert.match(enabled.stdout, /never the arguments/);
    await inst.startDaemon();
    url = (JSON.parse(await readFile(join(inst.sb.home, 'run', 'approval-page.json'), 'utf8')) as { url: string }).url;
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    events = await watchEvents(() => inst.operator());
    agent = await inst.client({ name: 'page-agent' });
    browser = await launchChromium();
    page = await browser.context.newPage();
    if (process.env['PAGE_DEBUG'] === '1') page.on('console', (m) => process.stderr.write(`[page] ${m.text()}\n`));
  });
  after(async () => {
    process.env['PATH'] = originalPath;
    await browser?.close();
    events?.close();
    await inst?.cleanup();
    await target?.close();
    await hook?.close();
  });

  it('pairs the browser with the one-time code `postern approvals pair` prints; the code works once', async () => {
    await page.goto(url);
    await page.waitForSelector('#pair:not([hidden])');
    assert.equal(await page.getAttribute('#status', 'data-code'), 'DEVICE_UNPAIRED');
    const r = await inst.sb.run(['approvals', 'pair', '--name', 'phone', '--qr', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    const link = /open[^\n]*:\n(\S+)/.exec(r.stdout)?.[1] ?? '';
    const code = /#pair=([A-Z0-9]+)&key=[A-Z0-9]{4}-[A-Z0-9]{4}$/.exec(link)?.[1] ?? '';
    assert.ok(link.startsWith(url) && code.length === 10, r.stdout);
    assert.match(r.stdout, /[▄▀█]{6}/, 'a QR code of the link');
    await page.goto(link);
    assert.equal(await page.inputValue('#pair-code'), code, 'the code is taken from the link');
    await page.click('#pair-submit');
    await page.waitForSelector('#app[data-ready="yes"]');
    assert.equal(new URL(page.url()).hash, '', 'the code leaves the address bar');
    const again = await page.evaluate(async (c) => ((await (await import(['', 'device.js'].join('/')) as { pair(c: string, k: string): Promise<{ error?: { code: string } }> }).pair(c, '')).error?.code ?? 'paired'), code);
    assert.equal(again, 'PAIRING_REFUSED', 'a code pairs one device');
    const list = await inst.sb.run(['approvals', 'devices', '--json', '--passphrase-file', inst.passFile]);
    const devices = JSON.parse(list.stdout) as { id: string; name: string; revoked_at: string | null }[];
    assert.equal(devices.length, 1);
    assert.deepEqual([devices[0]!.name, devices[0]!.revoked_at], ['phone', null]);
    deviceId = devices[0]!.id;
    assert.deepEqual(await browser.context.cookies(url), [], 'no cookie: nothing is sent without a signature');
    const loot = await lootOrigin(page);
    assert.deepEqual([loot.record?.id, loot.record?.extractable, loot.local], [deviceId, false, {}], 'the device key is in IndexedDB, not extractable; nothing in localStorage');
    assert.match(loot.exported, /^refused: InvalidAccessError/);
    const shown = await page.textContent('#run');
    assert.match(shown ?? '', new RegExp(`run ${/run ([A-Z0-9]{4}-[A-Z0-9]{4})/.exec(r.stdout)?.[1] ?? 'none'}`), 'the page shows the run fingerprint `pair` printed');
  });

  it('approve once: the card on the page is the one card view; the decision is the daemon\'s, journaled with the device id; sent again it is DECISION_REPLAYED', async () => {
    const call = waiting(agent, 'create_issue', { title: `first ${CANARY}` });
    const { card } = await events.next('approval.added');
    await page.waitForSelector(cardOnPage(card.id));
    assert.deepEqual(await rowsOnPage(card.id), presentation(card).rows.map((r) => [r.label, r.value]));
    assert.match((await page.textContent(`${cardOnPage(card.id)} .countdown`)) ?? '', /^(\d+s|\dm\d\ds) left$/, 'a countdown to the expiry');
    const sent = page.waitForRequest('**/api/decide');
    await page.click(`${cardOnPage(card.id)} [data-action="approve-once"]`);
    const req = await sent;
    const resolved = await events.next('approval.resolved', (e) => e.id === card.id);
    assert.deepEqual(resolved.decision.kind === 'approved' ? [resolved.decision.scope, resolved.decision.by] : null, ['once', `device:${deviceId}`]);
    const r = await call;
    assert.equal(r.isError, undefined, JSON.stringify(r));
    const { record } = await events.next('activity', (e) => e.record.tool === 'create_issue' && e.record.status === 'success');
    const shown = await inst.sb.run(['audit', 'show', record.id]);
    assert.match(shown.stdout, new RegExp(`by\\s+device:${deviceId} at `), shown.stdout);
    const replay = await sendFromPage(req.postData() ?? '');
    assert.deepEqual([replay.status, replay.json.error?.code], [409, 'DECISION_REPLAYED']);
    // The very request the page sent, sent again byte for byte: its counter is used.
    const h = req.headers();
    const again = await rawRequest(Number(new URL(url).port), 'POST', '/api/decide', { host: new URL(url).host, origin: new URL(url).origin, 'content-type': 'application/json', 'x-postern-device': h['x-postern-device'] ?? '', 'x-postern-view': h['x-postern-view'] ?? '', 'x-postern-proof': h['x-postern-proof'] ?? '' }, req.postData() ?? '');
    assert.deepEqual([again.status, (JSON.parse(again.text) as { error: { code: string } }).error.code], [401, 'DEVICE_PROOF_INVALID']);
    await page.waitForSelector(`${cardOnPage(card.id)}`, { state: 'detached' });
    assert.equal(target.requests.filter((x) => x.body.toString('utf8').includes('first')).length, 1, 'it ran once');
  });

  it('deny with a reason: the agent is told, nothing runs', async () => {
    const call = waiting(agent, 'create_issue', { title: `second ${CANARY}` });
    const { card } = await events.next('approval.added');
    await page.fill(`${cardOnPage(card.id)} input.reason`, 'not on a Friday');
    await page.click(`${cardOnPage(card.id)} [data-action="deny"]`);
    const resolved = await events.next('approval.resolved', (e) => e.id === card.id);
    assert.deepEqual(resolved.decision.kind === 'denied' ? [resolved.decision.reason, resolved.decision.by] : null, ['not on a Friday', `device:${deviceId}`]);
    const r = await call;
    assert.equal(r.isError, true);
    assert.equal(r.structuredContent?.['error_code'], 'APPROVAL_DENIED');
    assert.equal(target.requests.filter((x) => x.body.toString('utf8').includes('second')).length, 0);
  });

  it('approve for the session: the next call of the tool in that session runs without a card', async () => {
    const first = waiting(agent, 'add_label', { label: 'bug' });
    const { card } = await events.next('approval.added');
    await page.waitForSelector(`${cardOnPage(card.id)} [data-action="approve-session"]:not([disabled])`);
    if (process.env['POSTERN_WRITE_SCREENSHOT'] === '1') await page.screenshot({ path: resolve(import.meta.dirname, '../../docs/img/approval-page.png'), fullPage: true });
    await page.click(`${cardOnPage(card.id)} [data-action="approve-session"]`);
    const grant = await events.next('grant.added', (e) => e.grant.tool === 'add_label');
    assert.equal(grant.grant.by, `device:${deviceId}`);
    assert.equal((await first).isError, undefined);
    const before = events.events.filter((e) => e.event.type === 'approval.added').length;
    const second = await waiting(agent, 'add_label', { label: 'feature' });
    assert.equal(second.isError, undefined, JSON.stringify(second));
    assert.equal(events.events.filter((e) => e.event.type === 'approval.added').length, before, 'no card for the granted call');
  });

  it('the hostile display corpus is shown escaped: the same rows `postern approvals show` prints, nothing raw, no session grant for a folded card', async () => {
    const hostileAgent = await inst.client({ name: `${H.cr}${H.bidi}` });
    const title = [H.erase, H.cursor, H.conceal, H.osc8, H.osc52, H.dcs, H.c1, H.bidi, H.zw, H.vs, H.tag, H.title, H.spaces, '; rm -rf /tmp/victim'].join('|');
    const call = waiting(hostileAgent, 'create_issue', { title });
    const { card } = await events.next('approval.added');
    await page.waitForSelector(cardOnPage(card.id));
    const rows = await rowsOnPage(card.id);
    assert.deepEqual(rows, presentation(card).rows.map((r) => [r.label, r.value]));
    const text = await page.innerText('body');
    assert.ok(!RAW_HIDDEN.test(text), 'nothing invisible or controlling reaches the page raw');
    // The client name's RLO is escaped by the sanitizer; the arguments' ESC was already \u001b in their JSON (its backslash doubled).
    assert.ok(text.includes('safe\\u202Etxt.exe'), 'the bidi override is visible');
    assert.ok(text.includes('ok\\\\u001b[2K'), 'the erase-line is visible');
    assert.match(text, /show all \([\d,]+ more characters\)/, 'the 10,000 spaces are folded visibly, to be expanded in place');
    const shown = await inst.sb.run(['approvals', 'show', card.id.slice(0, 8), '--passphrase-file', inst.passFile]);
    assert.equal(shown.code, 0, shown.stderr);
    // The CLI prints each row as `label value`, folded to its pipe's width behind its continuation mark.
    for (const [label, value] of rows) assert.ok(shown.stdout.includes(terminalLines(`${label.padEnd(14)}${value}`, Number(PIPED_COLUMNS))), `the page's ${label} row is what the CLI prints`);
    // And what the TUI's details draw for the card (on a screen wide enough to fold nothing).
    const tui = cardRows(card, 100_000, true).lines.map((l) => l.map((s) => s.text).join(''));
    for (const [label, value] of rows) assert.ok(tui.some((t) => t.includes(value)), `the page's ${label} row is what the TUI draws`);
    assert.equal(await page.isDisabled(`${cardOnPage(card.id)} [data-action="approve-session"]`), true);
    const png = await page.locator(cardOnPage(card.id)).screenshot();
    assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG');
    await page.click(`${cardOnPage(card.id)} [data-action="deny"]`);
    await events.next('approval.resolved', (e) => e.id === card.id);
    assert.equal((await call).isError, true);
  });

  it('a card whose contract changes while it is open is marked stale: approve is not offered, and forced it is DECISION_STALE', async () => {
    // No progress token: after the short wait the call is answered APPROVAL_PENDING and its card stays open.
    const parked = (await agent.callTool({ name: 'rename', arguments: { name: `r ${CANARY}`, idempotency_key: key() } })) as Result;
    assert.equal(parked.structuredContent?.['error_code'], 'APPROVAL_PENDING');
    const card = (await events.client.request('approvals.list', {})).find((c) => c.tool === 'rename');
    assert.ok(card !== undefined);
    await page.waitForSelector(cardOnPage(card.id));
    const seen = page.waitForResponse('**/api/state');
    const r1 = (catalog.tools['rename'] as { revisions: Record<string, unknown>[] }).revisions[0]!;
    await inst.acceptCatalog({ ...catalog, tools: { ...catalog.tools, rename: tool('per-call', 'name', 100, [r1, { ...r1, revision: 2, http: http('/echo', { name: '{name}', v: 2 }), previous: { policy: 'reject' } }]) } });
    await events.next('approval.stale', (e) => e.id === card.id);
    await page.waitForSelector(`${cardOnPage(card.id)}[data-stale="yes"]`);
    await seen;
    assert.equal(await page.isDisabled(`${cardOnPage(card.id)} [data-action="approve-once"]`), true);
    const state = (await sendSigned(page, 'GET', '/api/state')).json as unknown as { cards: { id: string; digest: string; nonce: string }[] };
    const c = state.cards.find((x) => x.id === card.id)!;
    const forced = await sendFromPage(JSON.stringify({ card_id: c.id, digest: c.digest, nonce: c.nonce, verdict: 'approve', scope: 'once' }));
    assert.deepEqual([forced.status, forced.json.error?.code], [409, 'DECISION_STALE']);
    await page.click(`${cardOnPage(card.id)} [data-action="deny"]`);
    const resolved = await events.next('approval.resolved', (e) => e.id === card.id);
    assert.equal(resolved.decision.kind, 'denied');
    assert.equal(target.requests.filter((x) => x.body.toString('utf8').includes('"r ')).length, 0, 'nothing ran');
  });

  it('the webhook was told each card\'s tool and the page\'s link, never an argument or a secret', () => {
    const told = hook.requests.filter((r) => r.method === 'POST' && r.url === '/topic');
    assert.ok(told.length >= 5, `${told.length} notices`);
    for (const [i, r] of told.entries()) {
      const body = r.body.toString('utf8');
      assert.match(body, /^(create_issue|add_label|rename) waits for approval \(r\d+\)$/);
      assert.equal(hook.header(hook.requests.indexOf(r), 'click'), url, `notice ${i} links to the page`);
      const all = `${body}\n${r.headers.map(([k, v]) => `${k}: ${v}`).join('\n')}`;
      assert.ok(!all.includes(CANARY) && !all.includes(TOKEN) && !all.includes('rm -rf'), `notice ${i} carries no argument or secret`);
    }
    inst.sb.assertNeverPrinted(TOKEN, 'the bearer token');
  });

  it('the desktop notification (notify-send) names the tool only', async () => {
    const text = await readFile(notices, 'utf8');
    assert.match(text, /^--app-name=postern\nPostern: approval needed\ncreate_issue waits for approval\n/);
    assert.ok(!text.includes(CANARY) && !text.includes(TOKEN) && !text.includes('rm -rf'), text);
  });

  it('a revoked device is refused at once: the page says so and pairs again after a reload; an older device file put back trusts it again never', async () => {
    const beforeRevocation = await readFile(join(inst.sb.home, 'approval-devices.json'), 'utf8');
    const r = await inst.sb.run(['approvals', 'devices', 'revoke', deviceId.slice(0, 6), '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /revoked device [0-9a-f]{16} \(phone\)/);
    await page.waitForSelector('#status[data-code="DEVICE_UNPAIRED"]');
    await page.reload();
    await page.waitForSelector('#pair:not([hidden])');
    assert.equal(await page.getAttribute('#status', 'data-code'), 'DEVICE_UNPAIRED');
    const list = await inst.sb.run(['approvals', 'devices', '--passphrase-file', inst.passFile]);
    assert.match(list.stdout, /phone\s+\S+\s+revoked /);
    // The copy from before the revocation, put back while the daemon is stopped: the journal knows a later save.
    await inst.stopDaemon();
    await writeFile(join(inst.sb.home, 'approval-devices.json'), beforeRevocation);
    await inst.startDaemon();
    assert.match(inst.daemonLog, /ALARM: approval page: no device is trusted: approval-devices\.json is save 1, the journal recorded save 2/);
    const again = (JSON.parse(await readFile(join(inst.sb.home, 'run', 'approval-page.json'), 'utf8')) as { url: string }).url;
    await page.goto(again);
    await page.waitForSelector('#pair:not([hidden])');
    assert.equal(await page.getAttribute('#status', 'data-code'), 'DEVICE_UNPAIRED', 'the key it still holds is refused');
  });
});
