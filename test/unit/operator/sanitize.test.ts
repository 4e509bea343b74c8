/**
 * THREATS row 3 (hidden content on the approval screen): every control,
 * escape, bidi and zero-width character is shown escaped, and long content
 * is folded with a visible "+N more".
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CONTINUATION, cellWidth, foldLinesToWidth, foldToWidth, jsonForTerminal, sanitizeForTerminal, sanitizeWithInfo } from '../../../src/rules/terminal-text.js';
import { assertInert } from './helpers.js';


describe('sanitizeForTerminal', () => {
  const rows: { name: string; input: string; expect: string }[] = [
    { name: 'plain text is unchanged', input: 'POST https://api.example.com/x', expect: 'POST https://api.example.com/x' },
    { name: 'CSI erase-line', input: 'evil\u001b[2Kgood', expect: 'evil\\x1b[2Kgood' },
    { name: 'carriage return', input: 'rm -rf /\rls', expect: 'rm -rf /\\rls' },
    { name: 'newline and tab', input: 'a\nb\tc', expect: 'a\\nb\\tc' },
    { name: 'OSC title / hyperlink', input: '\u001b]0;pwned\u0007x', expect: '\\x1b]0;pwned\\x07x' },
    { name: 'OSC 8 hyperlink with ST', input: '\u001b]8;;https://evil\u001b\\ok\u001b]8;;\u001b\\', expect: '\\x1b]8;;https://evil\\x1b\\\\ok\\x1b]8;;\\x1b\\\\' },
    { name: 'C1 CSI and NEL', input: 'a\u009b2Kb\u0085c', expect: 'a\\x9b2Kb\\x85c' },
    { name: 'DEL and NUL', input: 'a\u007fb\u0000', expect: 'a\\x7fb\\x00' },
    { name: 'RLO bidi override', input: 'file\u202Etxt.exe', expect: 'file\\u202Etxt.exe' },
    { name: 'bidi isolates and marks', input: '\u2066a\u2069\u200F', expect: '\\u2066a\\u2069\\u200F' },
    { name: 'zero-width space, joiner, BOM', input: 'ev\u200Bil\u200D\uFEFF', expect: 'ev\\u200Bil\\u200D\\uFEFF' },
    { name: 'soft hyphen and word joiner', input: 'a\u00ADb\u2060c', expect: 'a\\xadb\\u2060c' },
    { name: 'line and paragraph separators', input: 'a\u2028b\u2029c', expect: 'a\\u2028b\\u2029c' },
    { name: 'tag characters (invisible ASCII)', input: 'ok\u{E0041}\u{E0042}', expect: 'ok\\u{E0041}\\u{E0042}' },
    { name: 'non-ASCII spaces and fillers', input: 'a\u00A0b\u3000c\u3164d', expect: 'a\\xa0b\\u3000c\\u3164d' },
    { name: 'variation selectors VS17+ and Mongolian FVS', input: 'ma\u{E0100}in\u180B', expect: 'ma\\u{E0100}in\\u180B' },
    { name: 'a lone surrogate', input: 'a\uD800b', expect: 'a\\uD800b' },
    { name: 'a backslash cannot fake an escape', input: 'a\\u202Eb', expect: 'a\\\\u202Eb' },
    { name: 'ordinary non-ASCII text stays readable', input: 'Grüße, 東京 — ok', expect: 'Grüße, 東京 — ok' },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const out = sanitizeForTerminal(r.input);
      assert.equal(out, r.expect);
      assertInert(out);
    });
  }

  it('10,000 spaces then text: folded, and the fold says how much is hidden', () => {
    const input = `${' '.repeat(10_000)}rm -rf ~`;
    const out = sanitizeForTerminal(input, 80);
    assert.ok(out.length < 120);
    assert.match(out, /… \+9928 more$/);
    assert.deepEqual(sanitizeWithInfo(input, 80).hidden, 9928);
    assert.equal(sanitizeWithInfo('short', 80).hidden, 0);
  });

  it('escapes count toward the limit, so a wall of escapes is folded too', () => {
    const out = sanitizeForTerminal('\u001b'.repeat(1_000), 40);
    assert.match(out, /^(\\x1b){10}… \+990 more$/);
  });

  it('stacked combining marks beyond a few are escaped', () => {
    const out = sanitizeForTerminal(`e${'\u0301'.repeat(8)}`);
    assert.equal(out, `e${'\u0301'.repeat(4)}${'\\u0301'.repeat(4)}`);
  });
});

describe('jsonForTerminal', () => {
  it('stays valid JSON with the same value and no raw controls, C1 or bidi', () => {
    const value = { a: 'x\u001b[2K\u009b\u202E\u200B\u2028\u{E0041}', n: 1 };
    const text = jsonForTerminal(value);
    assertInert(text, true); // only the layout's own newlines
    assert.deepEqual(JSON.parse(text), value);
    assertInert(jsonForTerminal(value, 0));
  });
});

describe('default-ignorable code points', () => {
  const rows: { name: string; input: string; expect: string }[] = [
    { name: 'variation selector supplement spells a word it is not', input: 'ma\u{E0100}\u{E01EF}in', expect: 'ma\\u{E0100}\\u{E01EF}in' },
    { name: 'variation selectors 1–16', input: 'a\uFE00b\uFE0Fc', expect: 'a\\uFE00b\\uFE0Fc' },
    { name: 'combining grapheme joiner', input: 'a\u034Fb', expect: 'a\\u034Fb' },
    { name: 'Mongolian free variation selector and vowel separator', input: 'a\u180Bb\u180Ec', expect: 'a\\u180Bb\\u180Ec' },
    { name: 'Hangul fillers', input: 'a\u115Fb\u1160c\uFFA0d', expect: 'a\\u115Fb\\u1160c\\uFFA0d' },
    { name: 'Khmer inherent vowels', input: 'a\u17B4b\u17B5c', expect: 'a\\u17B4b\\u17B5c' },
    { name: 'unassigned default-ignorable plane-14 code point', input: 'a\u{E0FFF}b', expect: 'a\\u{E0FFF}b' },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const out = sanitizeForTerminal(r.input);
      assert.equal(out, r.expect);
      assertInert(out);
    });
  }

  it('no default-ignorable code point in the BMP or plane 14 passes raw', () => {
    const ranges: [number, number][] = [[0x0000, 0xffff], [0xe0000, 0xe0fff]];
    for (const [lo, hi] of ranges) {
      for (let cp = lo; cp <= hi; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const ch = String.fromCodePoint(cp);
        if (!/\p{Default_Ignorable_Code_Point}/u.test(ch)) continue;
        assert.ok(!sanitizeForTerminal(`a${ch}b`).includes(ch), `U+${cp.toString(16)} passed raw`);
      }
    }
  });

  it('jsonForTerminal escapes them too and keeps the value', () => {
    const value = { branch: 'ma\u{E0100}in\uFE0F' };
    const text = jsonForTerminal(value, 0);
    assert.ok(!/\p{Default_Ignorable_Code_Point}/u.test(text));
    assert.deepEqual(JSON.parse(text), value);
  });
});

describe('foldToWidth', () => {
  it('a short line is one row', () => {
    assert.deepEqual(foldToWidth('target  GET https://a.example/', 80), ['target  GET https://a.example/']);
  });

  it('no row is wider than the terminal and every continuation starts with the mark', () => {
    const line = `args    ${'x'.repeat(50)}target        GET https://safe.example/ok${'y'.repeat(40)}`;
    for (const width of [20, 33, 80]) {
      const rows = foldToWidth(line, width, '        ');
      for (const r of rows) assert.ok(cellWidth(r) <= width, `${r} is wider than ${width}`);
      for (const r of rows.slice(1)) assert.ok(r.startsWith(`        ${CONTINUATION}`));
      assert.equal(rows.map((r, i) => (i === 0 ? r : r.slice(8 + CONTINUATION.length))).join(''), line);
    }
  });

  it('agent text that would start a row after a soft wrap is behind the mark instead', () => {
    const forged = `${' '.repeat(70)}postern: ok approved once`;
    const rows = foldToWidth(`reason  ${sanitizeForTerminal(forged, 1000)}`, 80);
    assert.ok(rows.length > 1);
    for (const r of rows.slice(1)) assert.ok(r.startsWith(CONTINUATION));
    assert.ok(!rows.some((r) => r.startsWith('postern:')));
  });

  it('wide characters count two cells and grapheme clusters stay whole', () => {
    const rows = foldToWidth('東京東京東京', 5);
    for (const r of rows) assert.ok(cellWidth(r) <= 5);
    const flag = foldToWidth('ab🇫🇷🇫🇷🇫🇷', 4);
    for (const r of flag) assert.equal((r.match(/[\u{1F1E6}-\u{1F1FF}]/gu)?.length ?? 0) % 2, 0, `a flag was split: ${r}`);
  });

  it('a control character a caller forgot to sanitize is escaped, not printed', () => {
    const rows = foldToWidth('a\u001b[2Kb\rc', 80);
    assert.deepEqual(rows, ['a\\x1b[2Kb\\rc']);
    assertInert(rows.join(''));
  });

  it('progresses even when the terminal is narrower than the indent', () => {
    const rows = foldToWidth('abcdef', 2, '      ');
    assert.ok(rows.length >= 3);
    assert.equal(rows.map((r, i) => (i === 0 ? r : r.slice(6 + CONTINUATION.length))).join(''), 'abcdef');
  });

  it('foldLinesToWidth folds each line of a multi-line dump', () => {
    const rows = foldLinesToWidth('{\n  "a": "' + 'z'.repeat(100) + '"\n}', 40, '  ');
    for (const r of rows) assert.ok(cellWidth(r) <= 40);
    assert.equal(rows[0], '{');
    assert.equal(rows.at(-1), '}');
  });
});
