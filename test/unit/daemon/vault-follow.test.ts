/**
 * What the daemon logs when it adopts a vault generation: a change of
 * credentials is named as one; a generation that changed no credential (the
 * daemon's own journal anchor on a first start, a new passphrase) is not
 * worded as if a secret changed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { onVaultChange } from '../../../src/daemon/lifecycle/vault-follow.js';
import type { VaultChange } from '../../../src/daemon/services/state.js';

function logOf(change: VaultChange): string[] {
  const lines: string[] = [];
  onVaultChange({
    ssh: { retire: () => 0 },
    http: null,
    tokens: { drop: () => undefined },
    anchor: { noteVaultGeneration: () => undefined },
    journalEvent: () => undefined,
    rejudgeCatalog: () => undefined,
    log: (l) => lines.push(l),
  })(change);
  return lines;
}

describe('onVaultChange: the log line', () => {
  it('a generation with no credential change says so, not "adopted … added/rotated/removed"', () => {
    const lines = logOf({ from: 1, to: 2, added: [], rotated: [], removed: [] });
    assert.deepEqual(lines, ['vault generation 2 in use (was 1): no credential changed']);
  });
  it('a rotation names the credential', () => {
    const lines = logOf({ from: 3, to: 4, added: [], rotated: ['api-token'], removed: [] });
    assert.equal(lines.length, 1);
    assert.match(lines[0] ?? '', /^vault generation 4 adopted \(was 3\): added -; rotated api-token; removed -; 0 SSH connections retired$/);
  });
});
