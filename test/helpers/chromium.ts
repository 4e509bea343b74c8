/**
 * Debian's Chromium (/usr/bin/chromium) driven by playwright-core, for the
 * approval page's browser tests. Without it the tests skip and say why —
 * unless POSTERN_REQUIRE_CHROMIUM=1 (.ci/run), where its absence fails them.
 * Each browser gets a fresh profile directory, removed at close, and the
 * flags that keep a headless Chromium from reaching for the network (this
 * machine has none: without them its background connections are refused in
 * bursts).
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run here (a `skip` reason), or false when they can. Throws when they must run and cannot. */
export function chromiumSkip(): string | false {
  if (existsSync(CHROMIUM)) return false;
  if (process.env['POSTERN_REQUIRE_CHROMIUM'] === '1') throw new Error(`POSTERN_REQUIRE_CHROMIUM=1 but ${CHROMIUM} is absent (apt-get install chromium)`);
  return `${CHROMIUM} is absent (apt-get install chromium; POSTERN_REQUIRE_CHROMIUM=1 makes this a failure)`;
}

export interface Browser {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

/** `acceptCertificate`: the page's self-signed certificate (a test checks its fingerprint itself, as the operator would). */
export async function launchChromium(opts: { acceptCertificate?: boolean } = {}): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), 'postern-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1100, height: 900 },
    ignoreHTTPSErrors: opts.acceptCertificate === true,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
