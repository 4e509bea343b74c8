/**
 * The width rule (src/rules/terminal-text.ts) against graphemes terminals
 * disagree on: cellWidth is never less than any terminal draws (each code
 * point apart at its widest, or string-width's count, which ink uses);
 * graphemes whose width is not settled (keycaps, lone Hangul jamo, code
 * points newer than Unicode 14) are escaped visibly; folded rows stay
 * within the width by that count.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import stringWidth from 'string-width';
import { CONTINUATION, CONTINUATION_CELLS, WIDTH_TABLE_UNICODE, cellWidth, foldToWidth, jsonForTerminal, rowWidth, sanitizeForTerminal } from '../../../src/rules/terminal-text.js';

/** How many cells a terminal that draws every code point apart, at its widest, gives a string. */
function widestDraw(s: string): number {
  let n = 0;
  for (const ch of s) {
    if (/[\p{Extended_Pictographic}\p{Regional_Indicator}\p{Emoji_Modifier}]/u.test(ch)) n += 2;
    else n += stringWidth(ch, { ambiguousIsNarrow: false }) === 2 ? 2 : 1;
  }
  return n;
}

// grapheme → [what string-width counts, what terminals draw] as reported.
const DRAWN_WIDER = ['กำ', '👍🏽', 'ক্ষ', 'ក្ក', '🇺🇸', 'ไม่', 'क्षि', 'Ω', '…', '→', '①', '\u{1F9D1}\u{1F3FF}'];
const ESCAPED: [string, string][] = [
  ['1\u20e3', '1\\u20E3'],
  ['ಕೳ', 'ಕ\\u0CF3'],
  ['\u{1FAE8}', '\\u{1FAE8}'],
  ['\u{2EBF0}', '\\u{2EBF0}'],
  ['\u1100', '\\u1100'],
  ['\ua960', '\\uA960'],
  ['\u1161', '\\u1161'],
  ['\u11a8', '\\u11A8'],
  ['\ud7b0', '\\uD7B0'],
];

describe('the width of a grapheme is counted at its widest', () => {
  it('is never less than a terminal drawing each code point apart, nor than string-width', () => {
    for (const g of [...DRAWN_WIDER, 'e\u0301', '中', '한', 'ｱ', 'abc', '☺', '©']) {
      assert.ok(cellWidth(g) >= widestDraw(g), `${g}: ${cellWidth(g)} < ${widestDraw(g)}`);
      assert.ok(cellWidth(g) >= stringWidth(g), `${g}: below string-width`);
    }
    assert.equal(cellWidth('กำ'), 2);
    assert.equal(cellWidth('👍🏽'), 4);
    assert.equal(cellWidth('ক্ষ'), 3);
    assert.equal(cellWidth('plain ascii'), 11);
  });

  it('the continuation mark takes the cells the fold counts for it, measured the general way', () => {
    assert.equal(cellWidth(CONTINUATION), CONTINUATION_CELLS);
    assert.equal(cellWidth(`    ${CONTINUATION}`), 4 + CONTINUATION_CELLS);
    // A fold of ASCII text under a narrow width: every row, lead included, within the width.
    for (const row of foldToWidth('x'.repeat(50), 12, '  ')) assert.ok(cellWidth(row) <= 12, row);
  });

  it('escapes graphemes whose width is not settled, in text and in JSON', () => {
    for (const [g, shown] of ESCAPED) {
      assert.equal(sanitizeForTerminal(g), shown);
      const json = jsonForTerminal({ v: g });
      assert.deepEqual(JSON.parse(json), { v: g }, 'the JSON keeps its value');
      assert.ok(!json.includes(g.slice(-1)), `${JSON.stringify(g)} escaped in JSON`);
    }
    assert.equal(sanitizeForTerminal('กำ 👍🏽 é 中'), 'กำ 👍🏽 é 中', 'settled graphemes stay readable');
  });

  it('covers the runtime\'s Unicode version (a newer one needs the table extended)', () => {
    assert.ok(Number.parseInt(process.versions.unicode ?? '0', 10) <= WIDTH_TABLE_UNICODE, `Unicode ${process.versions.unicode}`);
  });

  it('folds rows of unsettled graphemes so that no terminal draws one wider than the row', () => {
    const line = sanitizeForTerminal(`title       ${[...DRAWN_WIDER, ...ESCAPED.map((e) => e[0])].join('').repeat(8)}`, 10_000);
    const rows = foldToWidth(line, rowWidth(80), '          ');
    assert.ok(rows.length > 3);
    for (const r of rows) assert.ok(widestDraw(r) <= 79, `${widestDraw(r)}: ${r}`);
    for (const r of rows.slice(1)) assert.ok(r.startsWith(`          ${CONTINUATION}`), r);
  });

  it('shows a run of lone Hangul jamo (one grapheme) as escapes, so it folds like any text', () => {
    const run = '\u1100'.repeat(40);
    assert.equal([...new Intl.Segmenter(undefined, { granularity: 'grapheme' }).segment(run)].length, 1, 'one grapheme');
    assert.equal(sanitizeForTerminal(run, 1000), '\\u1100'.repeat(40));
    const rows = foldToWidth(`body          ${sanitizeForTerminal(run, 1000)}`, rowWidth(80), '          ');
    for (const r of rows) assert.ok(widestDraw(r) <= 79, `${widestDraw(r)}: ${r}`);
  });

  it('shows a grapheme no row can hold as escapes when folding, so no row is wider than the width', () => {
    // Consonant–virama chains join into one grapheme (Unicode 15.1); each piece is counted at its widest.
    const chain = 'क्'.repeat(40);
    for (const width of [20, 40, 79]) {
      const rows = foldToWidth(`body          ${chain}`, width, '          ');
      for (const r of rows) assert.ok(widestDraw(r) <= width, `${width}: ${widestDraw(r)}: ${r}`);
      assert.ok(rows.join('').includes('\\u094D'), 'shown as escapes');
    }
    assert.deepEqual(foldToWidth('👍🏽🇺🇸 ok', 40), ['👍🏽🇺🇸 ok'], 'graphemes that fit a row are kept whole');
  });
});
