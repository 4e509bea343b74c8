/**
 * For the approval page's browser tests: what the page's origin holds about
 * its device (read in the page, as any script of that origin could), a
 * request signed by the page's own device module (device.js), and a raw HTTP
 * request from outside any browser (for replaying what a server captured),
 * and a device as the page's script is one, in Node (for in-process tests).
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { request } from 'node:http';
import type { Page } from 'playwright-core';
import { bodyDigest, pairMessage, requestMessage } from '../../src/daemon/approval-page/proof.js';

/** What a script of the page's origin finds: cookies, localStorage, the device record in IndexedDB and whether its key exports. */
export interface OriginLoot {
  readonly cookie: string;
  readonly local: Record<string, string>;
  readonly record: { id?: string; extractable?: boolean; usages?: string[] } | null;
  readonly exported: string;
}

/** Reads everything the origin's storage holds and tries to export the device key (run in the page). */
export const LOOT_SCRIPT = `(async () => {
  const local = {};
  for (let i = 0; i < localStorage.length; i++) { const k = localStorage.key(i); local[k] = localStorage.getItem(k); }
  const rec = await new Promise((resolve) => {
    const r = indexedDB.open('postern', 1);
    r.onupgradeneeded = () => r.result.createObjectStore('device');
    r.onerror = () => resolve(null);
    r.onsuccess = () => {
      const tx = r.result.transaction('device', 'readonly');
      const g = tx.objectStore('device').get('self');
      g.onsuccess = () => resolve(g.result ?? null);
      g.onerror = () => resolve(null);
    };
  });
  let exported = 'no key';
  if (rec && rec.key) {
    for (const f of ['pkcs8', 'jwk']) {
      try { const k = await crypto.subtle.exportKey(f, rec.key); exported = 'EXPORTED ' + JSON.stringify(k instanceof ArrayBuffer ? [...new Uint8Array(k)] : k); break; }
      catch (e) { exported = 'refused: ' + e.name; }
    }
  }
  return { cookie: document.cookie, local, record: rec ? { id: rec.id, extractable: rec.key ? rec.key.extractable : undefined, usages: rec.key ? rec.key.usages : undefined } : null, exported };
})()`;

export function lootOrigin(page: Page): Promise<OriginLoot> {
  return page.evaluate<OriginLoot>(LOOT_SCRIPT);
}

/**
 * Pairs the page's browser: `pairing` is the output of `postern approvals pair`; its link is opened
 * (on `hostname` when given: `localhost` for passkeys), the code submitted, the page shown.
 * Returns the link as opened.
 */
export async function pairFromLink(page: Page, pairing: string, hostname?: string): Promise<URL> {
  const link = new URL(/open[^\n]*:\n(\S+)/.exec(pairing)?.[1] ?? 'about:blank');
  if (hostname !== undefined) link.hostname = hostname;
  await page.goto(link.href);
  await page.click('#pair-submit');
  await page.waitForSelector('#app[data-ready="yes"]');
  return link;
}

/** A request signed by the page's device module (as the page's own script signs), after the daemon proved itself. */
export function sendSigned(page: Page, method: string, path: string, body?: unknown): Promise<{ status: number; json: { error?: { code: string }; [k: string]: unknown } }> {
  return page.evaluate(
    async ([m, p, b]) => {
      const mod = (await import(['', 'device.js'].join('/'))) as { open(): Promise<{ device?: { send(m: string, p: string, b?: unknown): Promise<{ status: number; json: never }> } }> };
      const o = await mod.open();
      if (o.device === undefined) throw new Error('not paired');
      return o.device.send(m, p, b === null ? undefined : b);
    },
    [method, path, body === undefined ? null : body] as const,
  );
}

export interface RawAnswer {
  readonly status: number;
  readonly text: string;
}

/** One HTTP request with exactly these headers and body (a captured request sent again). */
export function rawRequest(port: number, method: string, path: string, headers: Record<string, string>, body: string | Buffer = ''): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A device as the page's script is one, in Node: a P-256 key pair and the request signatures of proof.ts. */
export class NodeDevice {
  readonly keys = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  id = '';
  #counter = 0;

  /** The public key as the page sends it at pairing: the uncompressed point, base64url. */
  get publicKey(): string {
    const j = this.keys.publicKey.export({ format: 'jwk' });
    return Buffer.concat([Buffer.from([4]), Buffer.from(j.x ?? '', 'base64url'), Buffer.from(j.y ?? '', 'base64url')]).toString('base64url');
  }

  sign(message: string): string {
    return sign('sha256', Buffer.from(message), { key: this.keys.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
  }

  /** The pairing request's body for `code` under `view` in `run`. */
  pairing(code: string, origin: string, run: string, view: string): Record<string, string> {
    return { code, public_key: this.publicKey, view, signature: this.sign(pairMessage(code, origin, run, view, this.publicKey)) };
  }

  /** The headers of one signed request (the next counter unless one is given). */
  headers(f: { origin: string; run: string; view: string; method: string; path: string; body?: string; counter?: number }): Record<string, string> {
    const counter = f.counter ?? ++this.#counter;
    const message = requestMessage({ origin: f.origin, run: f.run, view: f.view, device: this.id, method: f.method, path: f.path, bodySha256: bodyDigest(Buffer.from(f.body ?? '')), counter });
    return { 'x-postern-device': this.id, 'x-postern-view': f.view, 'x-postern-proof': `${counter}.${this.sign(message)}` };
  }
}
