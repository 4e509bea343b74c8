// The unattended profile in config.yaml: off unless set, a boolean only.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseConfig } from '../../../src/daemon/services/config.js';
import { isPosternError } from '../../../src/rules/errors.js';

describe('config.yaml: unattended', () => {
  it('is off by default and on when set', () => {
    assert.equal(parseConfig('', 'config.yaml').unattended, false);
    assert.equal(parseConfig('unattended: true\n', 'config.yaml').unattended, true);
  });
  it('refuses anything but a boolean', () => {
    assert.throws(() => parseConfig('unattended: "yes"\n', 'config.yaml'), (e) => isPosternError(e, 'INPUT_INVALID') && /unattended/.test(e.message));
  });
});
