/**
 * The default approval waits fit a default MCP client: a call without a progress token is
 * answered before the SDKs' own request timeout, and progress comes often enough to reset it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_REQUEST_TIMEOUT_MSEC as V2_DEFAULT } from '@modelcontextprotocol/client';
import { DEFAULT_REQUEST_TIMEOUT_MSEC as V1_DEFAULT } from '@modelcontextprotocol/sdk/shared/protocol.js';
import { parseConfig } from '../../../src/daemon/services/config.js';

describe('default approval waits', () => {
  const c = parseConfig('', 'config.yaml');
  for (const [sdk, timeoutMs] of [['SDK 1.x', V1_DEFAULT], ['SDK 2.x', V2_DEFAULT]] as const) {
    it(`answer a client without progress before the ${sdk} default timeout (${timeoutMs} ms), with margin`, () => {
      assert.ok(c.approval_wait_without_progress_seconds * 1000 <= timeoutMs - 10_000, `${c.approval_wait_without_progress_seconds} s`);
    });
    it(`send progress several times per ${sdk} default timeout`, () => {
      assert.ok(c.progress_interval_seconds * 1000 * 4 <= timeoutMs, `${c.progress_interval_seconds} s`);
    });
  }
  it('keep the full approval window for clients that reset on progress', () => {
    assert.ok(c.approval_timeout_seconds > c.approval_wait_without_progress_seconds);
  });
});
