/**
 * The CLI's one output path (CliContext.out → terminalLines): text is folded
 * on a terminal and to a pipe alike (a pager soft-wraps too: COLUMNS, else
 * 100), so no row is wider than the width and agent text cannot begin a
 * row; JSON to a pipe is printed as it is.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { terminalLines } from '../../../src/cli/context.js';
import { renderTable } from '../../../src/cli/table.js';
import { PIPE_COLUMNS, isJsonDocument, textColumns } from '../../../src/cli/tty.js';
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

  it('prints JSON to a pipe as it is (columns undefined)', () => {
    assert.equal(terminalLines(forged, undefined), `${forged}\n`);
    assert.equal(terminalLines('{"a": 1}', undefined), '{"a": 1}\n');
    assert.ok(isJsonDocument(JSON.stringify({ a: 'x'.repeat(500) }, null, 2)));
    assert.ok(isJsonDocument('[1, 2]'));
    assert.ok(!isJsonDocument(forged));
    assert.ok(!isJsonDocument('{ not json'));
    // JSON Lines written in one go (audit export): raw only when every line is a document.
    assert.ok(isJsonDocument(`${JSON.stringify({ a: 1 })}\n${JSON.stringify({ b: 'x'.repeat(300) })}\n`));
    assert.ok(!isJsonDocument(`${JSON.stringify({ a: 1 })}\n${forged}`));
  });

  it('folds text to a pipe or a file: the terminal\'s width, else COLUMNS, else 100', () => {
    assert.equal(textColumns({ isTTY: true, columns: 120 }, { COLUMNS: '60' }), 120);
    assert.equal(textColumns({ isTTY: false }, { COLUMNS: '60' }), 60);
    assert.equal(textColumns({ isTTY: false }, { COLUMNS: 'wide' }), PIPE_COLUMNS);
    assert.equal(textColumns({}, {}), PIPE_COLUMNS);
    const long = `body          ${sanitizeForTerminal(`${'y'.repeat(90)}effect        read`, 500)}`;
    const rows = terminalLines(long, textColumns({ isTTY: false }, {})).split('\n').slice(0, -1);
    assert.ok(rows.length >= 2);
    for (const r of rows) assert.ok(cellWidth(r) < PIPE_COLUMNS, r);
    for (const r of rows.slice(1)) assert.ok(r.startsWith(CONTINUATION), r);
  });

  it('folds graphemes a terminal draws wider than string-width counts behind the mark', () => {
    const toned = `effect        ${sanitizeForTerminal('👍🏽'.repeat(40), 500)}`;
    const rows = terminalLines(toned, 80).split('\n').slice(0, -1);
    // Each toned thumb is drawn 4 cells by a terminal that does not join the skin tone.
    const drawn = (r: string): number => Array.from(r).reduce((n, ch) => n + ((ch.codePointAt(0) ?? 0) > 0x2000 ? 2 : 1), 0);
    for (const r of rows) assert.ok(drawn(r) <= 79, r);
    for (const r of rows.slice(1)) assert.ok(r.startsWith(CONTINUATION), r);
  });

  it('pads table columns by the cells a value takes', () => {
    const t = renderTable(['TOOL', 'REV'], [['中文', 'r1'], ['ab', 'r2']]).split('\n');
    assert.deepEqual(t, ['TOOL  REV', '中文  r1', 'ab    r2']);
  });
});
