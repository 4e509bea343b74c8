import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { LiteralMatcher, type Pattern } from '../../../src/redaction/matcher.js';

// A small alphabet, so patterns share prefixes, overlap and occur inside one another; one
// code unit above the Basic Latin range and a lone surrogate, so the automaton is not tied to ASCII.
const unit = fc.constantFrom('a', 'b', 'c', 'é', '\ud800');
const text = (maxLength: number) => fc.array(unit, { maxLength }).map((u) => u.join(''));
const patternsArb = fc.array(text(6), { maxLength: 12 }).map((texts) => texts.map((t, label): Pattern => ({ text: t, label })));

/** Every occurrence of every non-empty pattern, by a search per pattern and per position. */
function occurrences(patterns: readonly Pattern[], s: string): { start: number; end: number; label: number }[] {
  const out: { start: number; end: number; label: number }[] = [];
  for (const { text: p, label } of patterns) {
    if (p.length === 0) continue;
    for (let at = s.indexOf(p); at !== -1; at = s.indexOf(p, at + 1)) out.push({ start: at, end: at + p.length, label });
  }
  return out;
}

/** The union of the occurrences as sorted intervals that neither overlap nor touch-overlap. */
function union(occ: readonly { start: number; end: number }[]): { start: number; end: number }[] {
  const sorted = [...occ].sort((a, b) => a.start - b.start || b.end - a.end);
  const out: { start: number; end: number }[] = [];
  for (const o of sorted) {
    const top = out.at(-1);
    if (top !== undefined && o.start < top.end) top.end = Math.max(top.end, o.end);
    else out.push({ start: o.start, end: o.end });
  }
  return out;
}

describe('LiteralMatcher against a search per pattern', () => {
  it('covers exactly the union of all occurrences, each interval labelled by an occurrence that starts it', () => {
    fc.assert(
      fc.property(patternsArb, text(40), (patterns, s) => {
        const m = new LiteralMatcher(patterns);
        const got = m.cover(s);
        const occ = occurrences(patterns, s);
        assert.deepEqual(
          got.map(({ start, end }) => ({ start, end })),
          union(occ),
        );
        for (const iv of got) assert.ok(occ.some((o) => o.start === iv.start && o.label === iv.label), `label ${iv.label} starts no occurrence at ${iv.start}`);
      }),
      { numRuns: 2000 },
    );
  });

  it('openSuffix is the longest suffix of the text that begins some pattern', () => {
    fc.assert(
      fc.property(patternsArb, text(20), (patterns, s) => {
        const m = new LiteralMatcher(patterns);
        let expected = 0;
        for (let k = s.length; k > 0 && expected === 0; k--) if (patterns.some((p) => p.text.startsWith(s.slice(s.length - k)))) expected = k;
        assert.equal(m.openSuffix(s), expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('reports emptiness and the longest pattern', () => {
    fc.assert(
      fc.property(patternsArb, (patterns) => {
        const m = new LiteralMatcher(patterns);
        const lengths = patterns.map((p) => p.text.length);
        assert.equal(m.isEmpty, lengths.every((n) => n === 0));
        assert.equal(m.longest, Math.max(0, ...lengths));
      }),
    );
  });

  it('of equal patterns, the first given labels the match', () => {
    const m = new LiteralMatcher([
      { text: 'xyz', label: 7 },
      { text: 'yz', label: 1 },
      { text: 'xyz', label: 3 },
    ]);
    assert.deepEqual(m.cover('-xyz-'), [{ start: 1, end: 4, label: 7 }]);
  });
});
