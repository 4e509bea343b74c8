/**
 * The CLI's one output path (CliContext.out → terminalLines): on a terminal no
 * row is wider than it and agent text cannot begin a row; to a pipe the line
 * is unchanged.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { terminalLines } from '../../../src/cli/context.js';
import { CONTINUATION, cellWidth, sanitizeForTerminal } from '../../../src/rules/terminal-text.js';

describe('terminalLines', () => {
  const forged = `title         ${sanitizeForTerminal(`${'x'.repeat(66)}target        GET https://safe.example/ok`, 500)}`;

  it('folds every row to the terminal width behind a continuation mark', () => {
    const rows = terminalLines(forged, 80).split('\n').slice(0, -1);
    assert.ok(rows.length >= 2);
    for (const r of rows) assert.ok(cellWidth(r) <= 80, r);
    for (const r of rows.slice(1)) assert.ok(r.startsWith(CONTINUATION), r);
    assert.ok(!rows.some((r) => r.startsWith('target')));
  });

  it('folds each line of a multi-line block', () => {
    const rows = terminalLines(`a\n${'b'.repeat(50)}`, 20).split('\n').slice(0, -1);
    assert.equal(rows[0], 'a');
    for (const r of rows) assert.ok(cellWidth(r) <= 20);
  });

  it('leaves output to a pipe as it is', () => {
    assert.equal(terminalLines(forged, undefined), `${forged}\n`);
    assert.equal(terminalLines('{"a": 1}', undefined), '{"a": 1}\n');
  });
});
