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
import fc from 'fast-check';
import { CONTINUATION, CONTINUATION_CELLS, ONE_CLUSTER_PER_CODE_POINT, WIDTH_TABLE_UNICODE, cellWidth, drawnWidth, foldToWidth, jsonForTerminal, rowWidth, sanitizeForTerminal } from '../../../src/rules/terminal-text.js';

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

// The rule measures one code point, and text whose code points are each a cluster of their own,
// without string-width (whose tables cost a process about 0.1 s): the same answers.
describe('the width rule without string-width', () => {
  const MAY_BE_WIDE = /[\p{Extended_Pictographic}\p{Regional_Indicator}\p{Emoji_Modifier}]/u;
  /** Every code point of the Basic Multilingual Plane (where nearly all text is), and one in 61 beyond it. */
  const codePoints = function* (): Generator<string> {
    for (let cp = 0; cp <= 0x10ffff; cp += cp < 0x10000 ? 1 : 61) yield String.fromCodePoint(cp);
  };

  it('counts a code point as string-width does: at its widest for cellWidth, as drawn for drawnWidth', () => {
    const wrong: string[] = [];
    for (const ch of codePoints()) {
      const widest = /^[\x20-\x7e]$/.test(ch) ? 1 : Math.max(MAY_BE_WIDE.test(ch) || stringWidth(ch, { ambiguousIsNarrow: false }) >= 2 ? 2 : 1, stringWidth(ch));
      if (cellWidth(ch) !== widest || drawnWidth(ch) !== stringWidth(ch)) wrong.push(`U+${(ch.codePointAt(0) ?? 0).toString(16)}`);
    }
    assert.deepEqual(wrong.slice(0, 20), []);
  });

  /** The code points the rule measures one by one, without a segmenter (all in the BMP). */
  const single = Array.from({ length: 0x10000 }, (_, cp) => String.fromCharCode(cp)).filter((ch) => ONE_CLUSTER_PER_CODE_POINT.test(ch));

  it('text of those code points is one grapheme per code point, whatever the neighbours', () => {
    const seg = new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    assert.ok(single.length > 2000 && ['…', '→', '—', '\u2506'].every((ch) => single.includes(ch)), 'Postern\'s own marks are measured without a segmenter');
    assert.ok([...'\u0301\u200d\u1100\uac00\u0e33\u00ad\r'].every((ch) => !single.includes(ch)), 'no joining character is');
    for (const ch of single) {
      for (const text of [ch + ch, `a${ch}b`, `${ch}\u00e9${ch}`, `\u2192${ch}\u2026`]) assert.equal([...seg.segment(text)].length, [...text].length, `U+${(ch.codePointAt(0) ?? 0).toString(16)} in ${JSON.stringify(text)}`);
    }
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...single), { maxLength: 30 }), (chars) => {
        const text = chars.join('');
        assert.equal([...seg.segment(text)].length, chars.length);
        assert.equal(drawnWidth(text), stringWidth(text));
        assert.equal(cellWidth(text), chars.reduce((n, ch) => n + cellWidth(ch), 0));
      }),
      { numRuns: 2000 },
    );
  });
});

