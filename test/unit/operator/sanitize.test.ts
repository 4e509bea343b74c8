/**
 * THREATS row 3 (hidden content on the approval screen): every control,
 * escape, bidi and zero-width character is shown escaped, and long content
 * is folded with a visible "+N more".
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { jsonForTerminal, sanitizeForTerminal, sanitizeWithInfo } from '../../../src/protocol/terminal-text.js';
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
