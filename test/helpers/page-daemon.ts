/**
 * For the approval page's browser tests: an installation's daemon started
 * with its page enabled (any free port), the operator's event watch, an agent
 * client, a Chromium page, and the output of `postern approvals pair` for it
 * (pairFromLink in page-device.ts opens it).
 */
import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/client';
import type { Page } from 'playwright-core';
import { launchChromium, type Browser } from './chromium.js';
import type { Installation } from './daemon.js';
import { watchEvents, type EventWatch } from './operator-events.js';

export interface PageDaemon {
  readonly events: EventWatch;
  readonly agent: Client;
  readonly browser: Browser;
  readonly page: Page;
  /** What `postern approvals pair --name <device>` printed. */
  readonly pairing: string;
}

export async function startPageDaemon(inst: Installation, o: { agent: string; device: string }): Promise<PageDaemon> {
  const enabled = await inst.sb.run(['approvals', 'page', 'enable', '--port', '0', '--passphrase-file', inst.passFile]);
  assert.equal(enabled.code, 0, enabled.stderr);
  await inst.startDaemon();
  const events = await watchEvents(() => inst.operator());
  const agent = await inst.client({ name: o.agent });
  const browser = await launchChromium();
  const page = await browser.context.newPage();
  const r = await inst.sb.run(['approvals', 'pair', '--name', o.device, '--passphrase-file', inst.passFile]);
  assert.equal(r.code, 0, r.stderr);
  return { events, agent, browser, page, pairing: r.stdout };
}
