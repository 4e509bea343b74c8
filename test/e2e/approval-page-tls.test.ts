/**
 * The approval page on an address other than 127.0.0.1 is served over TLS
 * only: `postern approvals page enable --bind ADDR` makes a self-signed
 * certificate for that address, keeps its key in the vault (no key file is
 * left in the home) and prints the SHA-256 fingerprint; the daemon serves
 * exactly that certificate (the fingerprint a client sees is the printed
 * one), refuses plain HTTP and any Host but its own, and a browser that
 * accepted the certificate pairs with a Secure cookie. 127.0.0.2 stands in
 * for a LAN address (any address but 127.0.0.1 needs TLS).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { chromiumSkip, launchChromium, type Browser } from '../helpers/chromium.js';
import { install, type Installation } from '../helpers/daemon.js';
import { lootOrigin } from '../helpers/page-device.js';

const skip = chromiumSkip();
const BIND = '127.0.0.2';

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

describe('the approval page over TLS on another address', { skip }, () => {
  let inst: Installation;
  let browser: Browser;
  let url: URL;
  let fingerprint: string;

  before(async () => {
    inst = await install({ secrets: [{ name: 'api-token', kind: 'http_bearer', value: 'tok-tls-test-0001' }] });
    await inst.acceptCatalog({ targets: { local: { http: { origin: 'http://127.0.0.1:9', credential: 'api-token', auth: 'bearer', allow_private: true } } }, tools: {} });
    const r = await inst.sb.run(['approvals', 'page', 'enable', '--bind', BIND, '--port', '0', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    fingerprint = /certificate SHA-256 \(check it in the browser before pairing\): ([0-9a-f]{64})/.exec(r.stdout)?.[1] ?? '';
    assert.ok(fingerprint !== '', r.stdout);
    await inst.startDaemon();
    url = new URL((JSON.parse(await readFile(join(inst.sb.home, 'run', 'approval-page.json'), 'utf8')) as { url: string }).url);
    browser = await launchChromium({ acceptCertificate: true });
  });
  after(async () => {
    await browser?.close();
    await inst?.cleanup();
  });

  it('serves the certificate whose fingerprint enable printed; its key is in the vault, in no file of the home', async () => {
    assert.equal(url.protocol, 'https:');
    assert.equal(url.hostname, BIND);
    const seen = await new Promise<string>((resolve, reject) => {
      const s = connect({ host: BIND, port: Number(url.port), rejectUnauthorized: false }, () => {
        resolve(s.getPeerX509Certificate()?.fingerprint256 ?? '');
        s.end();
      });
      s.on('error', reject);
    });
    assert.equal(seen.replace(/:/g, '').toLowerCase(), fingerprint);
    for (const f of await filesUnder(inst.sb.home)) assert.ok(!(await readFile(f)).includes('PRIVATE KEY'), `${f} holds no key`);
    const list = await inst.sb.run(['secret', 'list', '--passphrase-file', inst.passFile]);
    assert.match(list.stdout, /approval-page\.tls\s+tls_key/);
  });

  it('refuses plain HTTP and a Host that is not its own', async () => {
    const plain = await new Promise<string>((resolve) => {
      const req = httpRequest({ host: BIND, port: Number(url.port), path: '/', headers: { host: url.host } }, (res) => resolve(`status ${res.statusCode}`));
      req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
      req.end();
    });
    assert.ok(!plain.startsWith('status 200'), plain);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest({ host: BIND, port: Number(url.port), path: '/', rejectUnauthorized: false, headers: { host: `127.0.0.1:${url.port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(status, 421);
  });

  it('a browser that accepted the certificate pairs: its key stays in the browser, no cookie is set', async () => {
    const page = await browser.context.newPage();
    await page.goto(url.href);
    await page.waitForSelector('#pair:not([hidden])');
    const r = await inst.sb.run(['approvals', 'pair', '--name', 'tablet', '--passphrase-file', inst.passFile]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`certificate SHA-256 \\(check it in the browser\\): ${fingerprint}`));
    const link = /open[^\n]*:\n(\S+)/.exec(r.stdout)?.[1] ?? '';
    await page.goto(link);
    await page.click('#pair-submit');
    await page.waitForSelector('#app[data-ready="yes"]');
    assert.deepEqual(await browser.context.cookies(url.href), []);
    const loot = await lootOrigin(page);
    assert.equal(loot.record?.extractable, false);
    assert.match(loot.exported, /^refused: /);
  });
});
