/** The demo SSH host splits exactly what Postern's quoting produces back into the same argv, and nothing else. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { shellQuote } from '../../../src/contracts/index.js';
import { splitQuoted } from '../../../src/demo/ssh-service.js';

it('splitQuoted(argv quoted and joined) is argv', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ unit: 'grapheme', minLength: 0, maxLength: 20 }).filter((s) => !s.includes('\0')), { minLength: 1, maxLength: 6 }), (argv) => {
      assert.deepEqual(splitQuoted(argv.map(shellQuote).join(' ')), argv);
    }),
  );
});

it('anything but single-quoted words is refused', () => {
  for (const c of ['ls', "'a' b", "'a", "'a'  'b'", '', "'a';rm"]) assert.equal(splitQuoted(c), null, c);
});
