/** "Did you mean": one or two slips (a swap counts once) are suggested; unrelated words are not. */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { closest, didYouMean, editDistance } from '../../../src/rules/suggest.js';

it('edit distance counts insertions, deletions, substitutions and adjacent swaps as one each', () => {
  assert.equal(editDistance('path', 'path'), 0);
  assert.equal(editDistance('paht', 'path'), 1);
  assert.equal(editDistance('aproval', 'approval'), 1);
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
});

it('suggests the closest known word only when it is a plausible slip', () => {
  const fields = ['description', 'effect', 'approval', 'revisions'];
  assert.equal(closest('aproval', fields), 'approval');
  assert.equal(closest('efect', fields), 'effect');
  assert.equal(closest('Effect', fields), 'effect');
  assert.equal(closest('colour', fields), undefined);
  assert.equal(closest('ab', ['ac']), undefined, 'one edit in two letters is not a slip');
  assert.equal(closest('effect', fields), undefined, 'an exact match needs no suggestion');
  assert.equal(didYouMean('api-tokn', ['api-token', 'deploy-key']), ' (did you mean "api-token"?)');
  assert.equal(didYouMean('zzz', []), '');
});
