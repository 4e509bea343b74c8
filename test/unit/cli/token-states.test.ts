// @subject time: token validity times (run again a year ahead by .ci/run)
/**
 * `secret list`'s token-state lines (src/cli/token-states.ts): with no
 * daemon it says so instead of guessing; with one it gives each minting
 * credential's times and last error, and a credential not used since the
 * unlock is said to have no token.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tokenStateLines, tokenStates } from '../../../src/cli/token-states.js';

describe('secret list: token states', () => {
  it('no daemon socket: "not running", nothing asked', async () => {
    const s = await tokenStates('/nonexistent/postern/run/operator.sock', new Uint8Array(32));
    assert.deepEqual(s, { daemon: 'not_running' });
    assert.deepEqual(tokenStateLines(['api'], s), ['token state: unknown — the daemon is not running (it holds the tokens it mints)']);
    assert.deepEqual(tokenStateLines([], s), []);
  });

  it('a running daemon: one line per credential', () => {
    const lines = tokenStateLines(['a', 'b', 'c'], {
      daemon: 'running',
      states: [
        { name: 'a', valid_until: '2026-12-01T11:00:00.000Z', last_refresh: '2026-12-01T10:00:00.000Z', last_error: null },
        { name: 'b', valid_until: null, last_refresh: null, last_error: { code: 'CREDENTIAL_UNAVAILABLE', message: 'credential b: the token endpoint answered HTTP 503', at: '2026-12-01T10:01:00.000Z' } },
      ],
    });
    assert.deepEqual(lines, [
      'a: valid until 2026-12-01T11:00:00.000Z; last refresh 2026-12-01T10:00:00.000Z; last error -',
      'b: valid until -; last refresh -; last error CREDENTIAL_UNAVAILABLE at 2026-12-01T10:01:00.000Z: credential b: the token endpoint answered HTTP 503',
      'c: no token minted since the daemon unlocked',
    ]);
  });
});
