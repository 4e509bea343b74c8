/**
 * The approval page keeps the seen rule and fits a phone, in a real Chromium
 * against the real daemon and a fake HTTP target whose request log says what
 * ran. For every case of the unseen-content corpus (test/helpers/
 * unseen-corpus.ts) the card opens with its sentence and the argument
 * summary, Approve is disabled, a decision forced from the page's origin
 * without the seen presentation is refused APPROVAL_UNSEEN, jumping to the
 * end of the card enables nothing, and nothing reaches the target; after
 * "Show all" and scrolling through every part, Approve is enabled and the
 * call runs. At 390×844, 360×740 and 1280×800 no element is wider than the
 * viewport, and on a standard card the decision buttons are on screen
 * without scrolling. Screenshots of a standard and a hostile card are
 * written to test-output/ (ignored by git; the paths are printed).
 *
 * Skips with a reason when /usr/bin/chromium is absent, unless
 * POSTERN_REQUIRE_CHROMIUM=1.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import type { Page } from 'playwright-core';
import { presentation } from '../../src/protocol/operator/index.js';
import { chromiumSkip, launchChromium, type Browser } from '../helpers/chromium.js';
import type { Installation } from '../helpers/daemon.js';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { watchEvents, type EventWatch } from '../helpers/operator-events.js';
import { sendSigned } from '../helpers/page-device.js';
import { UNSEEN_CORPUS, corpusTools, payloadReached } from '../helpers/unseen-corpus.js';

/** The page's storage and window, as the functions run in the page (page.evaluate) see them. */
declare const window: { innerWidth: number; innerHeight: number; scrollY: number; scrollBy(x: number, y: number): void; scrollTo(x: number, y: number): void; requestAnimationFrame(f: () => void): void };
declare const document: { documentElement: { scrollWidth: number; scrollHeight: number }; querySelectorAll(s: string): Iterable<{ getBoundingClientRect(): { left: number; right: number; top: number; bottom: number; width: number }; tagName: string; className: string }>; querySelector(s: string): { getBoundingClientRect(): { top: number; bottom: number; height: number } } | null };

type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };
const skip = chromiumSkip();
const OUT = resolve(import.meta.dirname, '../../test-output');
const SIZES: readonly [number, number][] = [[390, 844], [360, 740], [1280, 800]];

describe('the approval page: nothing unseen is approved, and it fits a phone', { skip }, () => {
  let inst: Installation;
  let target: FakeHttpServer;
  let agent: Client;
  let events: EventWatch;
  let browser: Browser;
  let page: Page;
  const key = (): string => `k-${randomBytes(6).toString('hex')}`;
  const waiting = (name: string, args: Record<string, unknown>): Promise<Result> =>
    agent.callTool({ name, arguments: { ...args, idempotency_key: key() } }, { onprogress: () => undefined, resetTimeoutOnProgress: true, timeout: 120_000 }) as Promise<Result>;
  const onPage = (id: string): string => `[data-card-id="${id}"]`;
  const frames = (): Promise<void> => page.evaluate(() => new Promise<void>((r) => window.requestAnimationFrame(() => window.requestAnimationFrame(() => r()))));

  /** Elements wider than the viewport or reaching past its right edge, and the page's own horizontal overflow. */
  const overflow = (): Promise<string[]> =>
    page.evaluate(() => {
      const w = window.innerWidth;
      const out: string[] = [];
      if (document.documentElement.scrollWidth > w) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${w}`);
      for (const e of document.querySelectorAll('body *')) {
        const r = e.getBoundingClientRect();
        if (r.width === 0) continue;
        if (r.right > w + 0.5 || r.left < -0.5) out.push(`${e.tagName}.${e.className} spans ${Math.round(r.left)}–${Math.round(r.right)} of ${w}`);
      }
      return out;
    });

  before(async () => {
    const ticket = {
      description: 'Open a ticket.',
      effect: 'write',
      approval: 'per-call',
      revisions: [{ revision: 1, input: { type: 'object', properties: { title: { type: 'string', maxLength: 200 } }, required: ['title'] }, http: { target: 'target', method: 'POST', path: '/echo', body: { title: '{title}' } } }],
    };
    ({ http: target, inst } = await httpFixture({
      token: canary('tok'),
      credential: 'tok',
      config: { approval_timeout_seconds: 300 },
      catalog: ({ local }) => ({ targets: { target: local }, tools: { ...corpusTools(), create_ticket: ticket } }),
      start: false,
    }));
    const enabled = await inst.sb.run(['approvals', 'page', 'enable', '--port', '0', '--passphrase-file', inst.passFile]);
    assert.equal(enabled.code, 0, enabled.stderr);
    await inst.startDaemon();
    events = await watchEvents(() => inst.operator());
    agent = await inst.client({ name: 'page-agent' });
    browser = await launchChromium();
    page = await browser.context.newPage();
    await page.setViewportSize({ width: 390, height: 844 });
    const url = (JSON.parse(await readFile(join(inst.sb.home, 'run', 'approval-page.json'), 'utf8')) as { url: string }).url;
    const r = await inst.sb.run(['approvals', 'pair', '--name', 'phone', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    const link = /open[^\n]*:\n(\S+)/.exec(r.stdout)?.[1] ?? '';
    assert.ok(link.startsWith(url), r.stdout);
    await page.goto(link);
    await page.click('#pair-submit');
    await page.waitForSelector('#app[data-ready="yes"]');
    await mkdir(OUT, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    events?.close();
    await inst?.cleanup();
    await target?.close();
  });

  it('serves an installable app: the manifest and its icons, with their own content types', async () => {
    const got = await page.evaluate(async () => {
      const m = await fetch('/manifest.webmanifest');
      const manifest = (await m.json()) as { icons: { src: string; type: string }[]; display: string; start_url: string };
      const icons = await Promise.all(manifest.icons.map(async (i) => { const r = await fetch(i.src); return [i.src, r.status, r.headers.get('content-type'), i.type] as const; }));
      return { type: m.headers.get('content-type'), csp: m.headers.get('content-security-policy'), display: manifest.display, start: manifest.start_url, icons };
    });
    assert.equal(got.type, 'application/manifest+json; charset=utf-8');
    assert.match(got.csp ?? '', /manifest-src 'self'/);
    assert.deepEqual([got.display, got.start], ['standalone', '/']);
    for (const [src, status, type, declared] of got.icons) assert.deepEqual([status, type], [200, declared], src);
    assert.ok(got.icons.some(([src]) => src === '/icon-512.png'));
  });

  it('a standard card: one sentence of what will happen, the buttons on screen without scrolling, nothing wider than the screen at phone and desktop sizes', async () => {
    const call = waiting('create_ticket', { title: 'Printer on floor 3 is out of toner' });
    const { card } = await events.next('approval.added', (e) => e.card.tool === 'create_ticket');
    await page.waitForSelector(onPage(card.id));
    assert.equal(await page.textContent(`${onPage(card.id)} .sentence`), `POST /echo on 127.0.0.1 with credential tok — write, does not widen`);
    assert.match((await page.textContent(`${onPage(card.id)} [data-label="arg sizes"] .value`)) ?? '', /^title 34 chars · idempotency_key \d+ chars$/);
    for (const [width, height] of SIZES) {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => window.scrollTo(0, 0));
      await frames();
      assert.deepEqual(await overflow(), [], `${width}×${height}`);
      const box = await page.locator(`${onPage(card.id)} [data-action="approve-once"]`).boundingBox();
      assert.ok(box !== null && box.y >= 0 && box.y + box.height <= height && box.x + box.width <= width, `${width}×${height}: Approve once is on screen without scrolling (${JSON.stringify(box)})`);
      assert.equal(await page.isEnabled(`${onPage(card.id)} [data-action="approve-once"]`), true);
      const path = join(OUT, `approval-page-standard-${width}x${height}.png`);
      await page.screenshot({ path });
      console.log(`screenshot: ${path}`);
    }
    await page.setViewportSize({ width: 390, height: 844 });
    await page.click(`${onPage(card.id)} [data-action="approve-once"]`);
    assert.equal((await call).isError, undefined);
    assert.ok(target.requests.some((r) => r.body.toString('utf8').includes('out of toner')));
  });

  for (const c of UNSEEN_CORPUS) {
    it(`${c.name}: Approve disabled, forced it is APPROVAL_UNSEEN, the end alone enables nothing; after scrolling through every part it runs`, async () => {
      await page.setViewportSize({ width: 390, height: 844 });
      const from = target.requests.length;
      const ran = (): boolean => payloadReached(target.requests.slice(from));
      const call = waiting(c.tool, c.args);
      const { card } = await events.next('approval.added', (e) => e.card.tool === c.tool);
      const sel = onPage(card.id);
      await page.waitForSelector(sel);
      const labels = await page.$$eval(`${sel} .row`, (rows) => rows.map((r) => r.getAttribute('data-label')));
      assert.deepEqual(labels.slice(0, 2), ['what', 'arg sizes'], 'the card opens with the sentence and the summary of every argument');
      assert.match((await page.textContent(`${sel} [data-label="arg sizes"] .value`)) ?? '', /LONG|a119 /);
      assert.equal(await page.isDisabled(`${sel} [data-action="approve-once"]`), true, 'Approve once is disabled');
      // Forced from the page's own origin, as a tampered script would: refused, nothing ran.
      const state = (await sendSigned(page, 'GET', '/api/state')).json as unknown as { cards: { id: string; digest: string; nonce: string }[] };
      const k = state.cards.find((x) => x.id === card.id)!;
      const signed = await sendSigned(page, 'POST', '/api/decide', { card_id: k.id, digest: k.digest, nonce: k.nonce, verdict: 'approve', scope: 'once' });
      const forced = { status: signed.status, code: signed.json.error?.code };
      assert.deepEqual(forced, { status: 409, code: 'APPROVAL_UNSEEN' });
      if (c.name === 'padding') {
        assert.deepEqual(await overflow(), [], 'the hostile card fits the phone');
        const path = join(OUT, 'approval-page-hostile-390x844.png');
        await page.screenshot({ path });
        console.log(`screenshot: ${path}`);
      }
      // "Show all", then straight to the end (the jump the TUI's G once was): the middle was never in view.
      await page.click(`${sel} [data-action="show-all"]`);
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await frames();
      assert.equal(await page.isDisabled(`${sel} [data-action="approve-once"]`), true, 'the end alone is not the whole card');
      assert.equal(ran(), false, 'nothing unseen ran');
      // Now read it: from the top, a third of the visible height at a time.
      await page.evaluate(() => window.scrollTo(0, 0));
      for (let i = 0; i < 400; i++) {
        await frames();
        if ((await page.getAttribute(sel, 'data-seen')) === 'yes') break;
        const moved = await page.evaluate(() => {
          const bar = document.querySelector('.actions')?.getBoundingClientRect().height ?? 0;
          const before = window.scrollY;
          window.scrollBy(0, Math.max(40, Math.floor((window.innerHeight - bar) / 3)));
          return window.scrollY !== before;
        });
        if (!moved) {
          await frames();
          break;
        }
      }
      assert.equal(await page.getAttribute(sel, 'data-seen'), 'yes', 'every part was in view');
      assert.equal(await page.isEnabled(`${sel} [data-action="approve-once"]`), true);
      const sent = page.waitForRequest('**/api/decide');
      await page.click(`${sel} [data-action="approve-once"]`);
      const body = JSON.parse((await sent).postData() ?? '{}') as { seen?: { presentation: string } };
      assert.equal(body.seen?.presentation, presentation(card).digest, 'the decision names the presentation seen');
      const r = await call;
      assert.equal(r.isError, undefined, JSON.stringify(r));
      assert.ok(ran(), 'seen whole and approved, it ran');
    });
  }
});
