/**
 * The CLI's one output path (CliContext.out → terminalLines): text is folded
 * on a terminal and to a pipe alike (a pager soft-wraps too: COLUMNS, else
 * 100), so no row is wider than the width and agent text cannot begin a
 * row; JSON to a pipe is printed as it is.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { linkLines, terminalLines } from '../../../src/cli/context.js';
import { renderTable } from '../../../src/cli/table.js';
import { PIPE_COLUMNS, isJsonDocument, textColumns } from '../../../src/cli/tty.js';
import { CONTINUATION, cellWidth, drawnWidth, sanitizeForTerminal } from '../../../src/rules/terminal-text.js';
import { col } from '../../../src/tui/views/list.js';

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

describe('what piped output folds at', () => {
  const words = (rows: string[]): string[] => rows.join(' ').replaceAll(CONTINUATION, ' ').split(/\s+/).filter((w) => w !== '');

  it('folds at spaces: no word or timestamp is cut when it fits a row', () => {
    const line = 'pairing code for work-laptop: 7KQ4MX9TRC (single use, until 2026-12-03T16:20:00.000Z) and then the rest of a long sentence';
    for (const columns of [40, 50, 60, 80]) {
      const rows = terminalLines(line, columns).split('\n').slice(0, -1);
      assert.ok(rows.length >= 2, `${columns}: folded`);
      for (const r of rows) assert.ok(cellWidth(r) <= columns - 1, r);
      for (const r of rows.slice(1)) assert.ok(r.startsWith(CONTINUATION), r);
      assert.deepEqual(words(rows), line.split(' '), `${columns}: every word whole`);
      assert.ok(rows.some((r) => r.includes('2026-12-03T16:20:00.000Z)')), `${columns}: the timestamp on one row`);
    }
  });

  it('still cuts a word longer than a row, and keeps a label with the value after it', () => {
    const rows = terminalLines(`body          ${'x'.repeat(200)}`, 80).split('\n').slice(0, -1);
    assert.match(rows[0] ?? '', /^body {10}x{65}$/);
    for (const r of rows) assert.ok(cellWidth(r) <= 79, r);
  });

  it('prints a link whole on a line of its own, however long; anything else is folded', () => {
    const url = `http://127.0.0.1:7470/#pair=7KQ4MX9TRC&key=RKQS-H66C&pad=${'a'.repeat(120)}`;
    assert.equal(linkLines(url, 80), `${url}\n`);
    const notLink = `http://x.example/ y ${'z'.repeat(120)}`;
    assert.equal(linkLines(notLink, 80), terminalLines(notLink, 80));
    assert.ok(linkLines(`javascript:${'a'.repeat(100)}`, 80).includes(CONTINUATION));
  });
});

describe('table cells cut or padded', () => {
  it('a cut cell keeps its separating space: the "…" counted at its widest, padded as drawn', () => {
    for (const value of ['x'.repeat(30), 'Ω'.repeat(30), '中'.repeat(30), `ab${'→'.repeat(30)}`]) {
      const cell = col(value, 12);
      assert.equal(drawnWidth(cell), 12, `${value}: the next column starts where it should`);
      assert.ok(cellWidth(cell.trimEnd()) <= 11, `${value}: fits its column where "…" is drawn 2 cells`);
      assert.ok(cell.endsWith(' '), `${value}: a space before the next column`);
      assert.ok(cell.includes('…'), `${value}: the cut is marked`);
    }
  });

  it('columns after East Asian ambiguous characters line up as they are drawn', () => {
    const rows = renderTable(['NAME', 'STATE'], [['ΩΩΩ', 'active'], ['abc', 'active'], ['Жж→', 'revoked'], ['中文', 'active']]).split('\n');
    const at = rows.map((r) => drawnWidth(r.slice(0, r.search(/(active|revoked|STATE)$/))));
    assert.ok(at.every((n) => n === at[0]), `the STATE column starts at ${at.join(', ')}`);
    for (const r of rows) assert.ok(/\S {2,}\S/.test(r), r);
  });
});
