// @subject time: pairing codes expire, authorization times (run again a year ahead by .ci/run)
/**
 * The approval page's operator state in the home and the daemon's registry
 * of devices: the MAC'd page authorization (its whole configuration: an
 * edited port, address or webhook authorizes nothing; an address other than
 * 127.0.0.1 needs TLS) and the MAC'd device file, both re-authenticated by
 * `passwd` (src/home/rekey.ts) — after which no older copy verifies; a
 * pairing code that expires on the injected clock; a webhook notice that
 * names the tool and links to the page, with the arguments only when the
 * operator opted in.
 */
import { NodeDevice } from '../../helpers/page-device.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceRegistry, PAIRING_TTL_MS } from '../../../src/daemon/approval-page/devices.js';
import { loadDeviceRegistry } from '../../../src/daemon/approval-page/start.js';
import { webhookMessage } from '../../../src/daemon/approval-page/notify.js';
import { loadApprovalDevices, saveApprovalDevices, type PairedDevice } from '../../../src/home/approval-devices.js';
import { judgeApprovalPage, readApprovalPageAuthorization, writeApprovalPageAuthorization } from '../../../src/home/approval-page-authorization.js';
import { HomeChange } from '../../../src/home/change-record.js';
import { homePaths } from '../../../src/home/paths.js';
import { prepareReauthentication } from '../../../src/home/rekey.js';
import { isPosternError } from '../../../src/rules/errors.js';
import { ManualClock } from '../../helpers/clock.js';
import { card } from '../tui/fake-client.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});
async function home() {
  const dir = await mkdtemp(join(tmpdir(), 'postern-page-'));
  dirs.push(dir);
  return homePaths(dir);
}
const settings = { port: 7470, bind: '127.0.0.1', tls_sha256: null, webhook: { url: 'https://ntfy.example/topic', arguments: false } };

describe('the approval page authorization', () => {
  const key = randomBytes(32);
  const at = new ManualClock('2026-03-01T12:00:00Z').now();

  it('is off when absent, and authorizes what it was written with, under this key only', async () => {
    const paths = await home();
    assert.deepEqual(judgeApprovalPage(key, await readApprovalPageAuthorization(paths)), { kind: 'off' });
    await writeApprovalPageAuthorization(paths, key, settings, at);
    const v = judgeApprovalPage(key, await readApprovalPageAuthorization(paths));
    assert.equal(v.kind, 'authorized');
    assert.deepEqual(v.kind === 'authorized' ? v.record.webhook : null, settings.webhook);
    assert.equal(judgeApprovalPage(randomBytes(32), await readApprovalPageAuthorization(paths)).kind, 'refused');
  });

  it('refuses an edited port, address or webhook, a forged MAC and a malformed file', async () => {
    const paths = await home();
    await writeApprovalPageAuthorization(paths, key, settings, at);
    const stored = JSON.parse(await readFile(paths.approvalPageAuthorization, 'utf8')) as { record: Record<string, unknown>; mac: string };
    for (const text of [
      JSON.stringify({ ...stored, record: { ...stored.record, port: 8000 } }),
      JSON.stringify({ ...stored, record: { ...stored.record, webhook: { url: 'https://evil.example/', arguments: true } } }),
      JSON.stringify({ ...stored, record: { ...stored.record, bind: '0.0.0.0', tls_sha256: 'a'.repeat(64) } }),
      JSON.stringify({ ...stored, mac: stored.mac.replace(/^./, (c) => (c === '0' ? '1' : '0')) }),
      '{',
    ]) {
      await writeFile(paths.approvalPageAuthorization, text);
      assert.equal(judgeApprovalPage(key, await readApprovalPageAuthorization(paths)).kind, 'refused', text);
    }
  });

  it('an address other than 127.0.0.1 is refused without TLS', async () => {
    const paths = await home();
    await assert.rejects(writeApprovalPageAuthorization(paths, key, { ...settings, bind: '192.168.1.20' }, at), (e) => isPosternError(e, 'USAGE') && /needs TLS/.test(e.message));
  });

  it('passwd re-authenticates the authorization and the devices; no older copy verifies afterwards', async () => {
    const paths = await home();
    const newKey = randomBytes(32);
    const device: PairedDevice = { id: '0123456789abcdef', name: 'phone', public_key: new NodeDevice().publicKey, paired_at: at.toISOString(), revoked_at: null };
    await writeApprovalPageAuthorization(paths, key, settings, at);
    await saveApprovalDevices(paths, key, [device], 1, at);
    const olderDevices = await readFile(paths.approvalDevices, 'utf8');
    const change = new HomeChange(paths, 'passwd');
    const summaries = (await prepareReauthentication(paths, { old: () => key, new: () => newKey }))(change);
    await change.commit();
    assert.ok(summaries.includes('approval page authorization: re-authenticated') && summaries.includes('approval page devices: re-authenticated'), summaries.join('\n'));
    assert.equal(judgeApprovalPage(newKey, await readApprovalPageAuthorization(paths)).kind, 'authorized');
    assert.deepEqual(await loadApprovalDevices(paths, newKey), { kind: 'ok', devices: [device], sequence: 1 });
    await writeFile(paths.approvalDevices, olderDevices);
    assert.equal((await loadApprovalDevices(paths, newKey)).kind, 'refused', 'a copy from before the change no longer verifies');
  });
});

describe('pairing codes and devices', () => {
  it('a device file older than the journal says (put back from before a revocation) trusts no device', async () => {
    const paths = await home();
    const key = randomBytes(32);
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    const logged: string[] = [];
    const reg = await loadDeviceRegistry(paths, () => key, clock, (l) => logged.push(l), 0);
    const phone = await reg.redeem(reg.openPairing('phone').code, new NodeDevice().publicKey);
    const beforeRevocation = await readFile(paths.approvalDevices, 'utf8');
    await reg.revoke(reg.list()[0]!.id);
    assert.equal(reg.sequence, 2);
    await writeFile(paths.approvalDevices, beforeRevocation);
    const restarted = await loadDeviceRegistry(paths, () => key, clock, (l) => logged.push(l), reg.sequence);
    assert.equal(restarted.live(phone.id), null);
    assert.deepEqual(restarted.list(), []);
    assert.match(logged.join('\n'), /ALARM: approval page: no device is trusted: approval-devices\.json is save 1, the journal recorded save 2/);
    await restarted.redeem(restarted.openPairing('tablet').code, new NodeDevice().publicKey);
    assert.equal(restarted.sequence, 3, 'the next save continues above the journal');
  });

  it('a code expires after PAIRING_TTL_MS on the monotonic clock; a revoked device stays listed', async () => {
    const clock = new ManualClock('2026-03-01T12:00:00Z');
    const reg = new DeviceRegistry({ devices: [], sequence: 0, clock, save: () => Promise.resolve() });
    const late = reg.openPairing('late');
    clock.advance(PAIRING_TTL_MS + 1);
    await assert.rejects(reg.redeem(late.code, new NodeDevice().publicKey), (e) => isPosternError(e, 'PAIRING_REFUSED'));
    const soon = reg.openPairing('soon');
    clock.advance(PAIRING_TTL_MS - 1);
    const key = new NodeDevice().publicKey;
    await assert.rejects(reg.redeem(soon.code, 'A'.repeat(87)), (e) => isPosternError(e, 'PAIRING_REFUSED'), 'not a P-256 point');
    const device = await reg.redeem(soon.code.toLowerCase(), key);
    assert.equal(device.public_key, key);
    assert.equal(reg.live(device.id)?.device.id, device.id);
    assert.equal(reg.live('0000000000000000'), null, 'another id');
    assert.equal(reg.live(undefined), null);
    const again = reg.openPairing('again');
    await assert.rejects(reg.redeem(again.code, key), (e) => isPosternError(e, 'PAIRING_REFUSED') && /already paired/.test(e.message), 'a key pairs once');
    await reg.revoke(device.id.slice(0, 6));
    assert.equal(reg.live(device.id), null);
    assert.ok(reg.list().some((d) => d.id === device.id && d.revoked_at !== null));
  });

  it('ten wrong codes void every open one', async () => {
    const reg = new DeviceRegistry({ devices: [], sequence: 0, clock: new ManualClock('2026-03-01T12:00:00Z'), save: () => Promise.resolve() });
    const open = reg.openPairing('x');
    for (let i = 0; i < 10; i++) await assert.rejects(reg.redeem(`WRONG${i}`, new NodeDevice().publicKey));
    await assert.rejects(reg.redeem(open.code, new NodeDevice().publicKey), (e) => isPosternError(e, 'PAIRING_REFUSED'));
  });
});

describe('the webhook notice', () => {
  const c = card({ tool: 'deploy_service', raw_arguments: { service: 'canary-raw' }, normalized_arguments: { service: 'canary-norm' } });
  it('names the tool and links to the page, without the arguments', () => {
    const m = webhookMessage(c, { pageUrl: 'http://127.0.0.1:7470/', arguments: false });
    assert.equal(m.body, 'deploy_service waits for approval (r3)');
    assert.equal(m.headers['Click'], 'http://127.0.0.1:7470/');
    assert.ok(!JSON.stringify(m).includes('canary'));
  });
  it('carries the normalized arguments only when the operator opted in', () => {
    const m = webhookMessage(c, { pageUrl: null, arguments: true });
    assert.match(m.body, /canary-norm/);
    assert.ok(!m.body.includes('canary-raw') && m.headers['Click'] === undefined);
  });
});
