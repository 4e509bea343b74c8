/**
 * A kill -9 at every file event of `postern anchor accept-vault` (an older
 * vault.pvlt put back on purpose) leaves the refusal as it was, which the
 * command run again settles, or the accepted vault: its anchor, the
 * journaled acceptance and the vault's save; either way one passphrase opens
 * the home, the daemon starts and the completed key replays
 * (the harness: test/helpers/crash-harness.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crashHarness } from '../helpers/crash-harness.js';
import { PASSPHRASE } from '../helpers/daemon.js';

describe('a kill -9 at every file event of a multi-file command', () => {
  const h = crashHarness();

  it('postern anchor accept-vault: the anchor, the journaled acceptance and the vault move together', async () => {
    const pass = (): string[] => ['--passphrase-file', h.inst.passFile];
    let rerun = 0;
    const events = await h.killAtEveryEvent(
      'anchor accept-vault',
      async () => {
        // An older vault put back: the copy from before a save the anchor followed.
        const vault = join(h.inst.sb.home, 'vault.pvlt');
        const older = join(h.inst.sb.dir, 'vault.older');
        await copyFile(vault, older);
        const r = await h.inst.sb.run(['secret', 'rotate', 'api-token', '--stdin', ...pass()], { input: `ROTATED-${randomBytes(8).toString('hex')}` });
        assert.equal(r.code, 0, r.stderr);
        await copyFile(older, vault);
      },
      () => ['anchor', 'accept-vault', '--yes', ...pass()],
      [PASSPHRASE],
      () => undefined,
      undefined,
      {
        // A kill before the anchor records the accepted generation leaves the refusal as it was: the operator runs it again.
        settle: async (where) => {
          const status = await h.inst.sb.run(['anchor', 'status', ...pass()]);
          if (status.code === 0) return;
          assert.match(status.stdout, /older than generation \d+ in the anchor/, `${where}: ${status.stdout}${status.stderr}`);
          rerun++;
          const again = await h.inst.sb.run(['anchor', 'accept-vault', '--yes', ...pass()]);
          assert.equal(again.code, 0, `${where}: accept-vault again: ${again.stderr}`);
        },
      },
    );
    assert.ok(events >= 6, `anchor accept-vault made ${events} file events`);
    assert.ok(rerun >= 1 && rerun < events, `some kills left the refusal (${rerun} of ${events})`);
  });
});
