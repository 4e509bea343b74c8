/**
 * The demo's narration is wrapped to the terminal's width under each step's
 * label (issue 25 §7), words kept whole where they fit; without a terminal
 * nothing is wrapped; the transcript the secret check reads keeps every line
 * whole, so a wrapped line cannot hide a secret from it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import stringWidth from 'string-width';
import { narrator, wrapWords } from '../../../src/demo/narrate.js';

const long = 'The agent gets notifications/tools/list_changed and, like any long-running agent, keeps its r1 plans while the operator approves.';

function written(columns: number | undefined): { rows: string[]; transcript: readonly string[] } {
  let out = '';
  const say = narrator((t) => (out += t), columns);
  say.step({ n: 5, label: 'drift', lines: [long, 'short'] });
  return { rows: out.split('\n').slice(0, -1), transcript: say.transcript };
}

describe('demo narration', () => {
  it('wraps each step to the terminal width under its label, words whole', () => {
    const { rows } = written(60);
    assert.ok(rows.length > 2, rows.join('\n'));
    for (const r of rows) assert.ok(stringWidth(r) < 60, `${stringWidth(r)}: ${r}`);
    assert.match(rows[0]!, /^ {3}5\. drift {9}The agent/);
    const indent = rows[0]!.indexOf('The');
    for (const r of rows.slice(1)) assert.equal(r.slice(0, indent).trim(), '', r);
    assert.equal(rows.slice(0, -1).map((r) => r.slice(indent)).join(' '), long);
    assert.equal(rows.at(-1)!.slice(indent), 'short');
  });

  it('leaves lines whole without a terminal, and the transcript always whole', () => {
    const plain = written(undefined);
    assert.equal(plain.rows.length, 2);
    assert.ok(plain.rows[0]!.endsWith(long));
    assert.deepEqual(written(60).transcript, plain.transcript);
  });

  it('cuts a word longer than a row, and keeps every character', () => {
    const word = 'x'.repeat(45);
    const rows = wrapWords(`a ${word} b`, 20);
    assert.ok(rows.every((r) => stringWidth(r) <= 20), rows.join('|'));
    assert.equal(rows.join('').replace(/ /g, ''), `a${word}b`);
  });
});
