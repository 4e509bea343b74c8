/**
 * Class 4: a secret returned through a reversible transform a target may
 * plausibly apply — line-wrapped base64 at any width, every character
 * `\u`-escaped or percent-encoded, mixed-case or colon-separated hex, HTML
 * character references — and a secret cut by a size cap.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { createRedactor, injectedForms } from '../../../src/redaction/index.js';

const TOKEN = 'tok_CANARY_rev3rsible_9f8e7d6c5b4a';
const r = createRedactor([{ name: 'api', bytes: Buffer.from(TOKEN) }]);
const M = '[REDACTED:api]';

/** Every `width` characters, a line break `eol`. */
const wrap = (s: string, width: number, eol: string): string => (s.match(new RegExp(`.{1,${width}}`, 'gs')) ?? []).join(eol);
const hexOf = (s: string): string => Buffer.from(s).toString('hex');
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');

/** A few hundred characters of plausible surroundings, then the secret. */
const padded = (n: number): string => `${'x'.repeat(n)}${TOKEN}`;

const CORPUS: readonly (readonly [string, string])[] = [
  ['MIME base64, 76 columns + CRLF, token straddling a break', wrap(b64(`${'.'.repeat(40)}${TOKEN}${'.'.repeat(40)}`), 76, '\r\n')],
  ['PEM-style base64, 64 columns + LF', wrap(b64(padded(30)), 64, '\n')],
  ['base64 wrapped at 60, 72, 4 and 1 columns', [60, 72, 4, 1].map((w) => wrap(b64(padded(17)), w, '\n')).join('\n--\n')],
  ['base64url wrapped with spaces', wrap(Buffer.from(padded(5)).toString('base64url'), 10, ' ')],
  ['base64 wrapped inside a JSON string (escaped \\r\\n)', JSON.stringify({ data: wrap(b64(padded(11)), 76, '\r\n') })],
  ['hex wrapped at 60 (xxd -p)', wrap(hexOf(padded(3)), 60, '\n')],
  ['hex in mixed case', hexOf(TOKEN).replace(/[a-f]/g, (c, i: number) => (i % 3 === 0 ? c.toUpperCase() : c))],
  ['hex bytes separated by colons', hexOf(TOKEN).replace(/(..)(?!$)/g, '$1:')],
  ['hex bytes separated by spaces (hexdump)', hexOf(TOKEN).replace(/(..)(?!$)/g, '$1 ')],
  ['every character \\u-escaped, lower case', [...TOKEN].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')],
  ['every character \\u-escaped, upper case', [...TOKEN].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()).join('')],
  ['every other character \\u-escaped', [...TOKEN].map((c, i) => (i % 2 ? c : '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))).join('')],
  ['every byte \\x-escaped', [...Buffer.from(TOKEN)].map((b) => '\\x' + b.toString(16).padStart(2, '0')).join('')],
  ['every byte percent-encoded', [...Buffer.from(TOKEN)].map((b) => '%' + b.toString(16).padStart(2, '0').toUpperCase()).join('')],
  ['every byte percent-encoded, mixed case', [...Buffer.from(TOKEN)].map((b, i) => '%' + (i % 2 ? b.toString(16).toUpperCase() : b.toString(16))).join('')],
  ['HTML decimal references', [...TOKEN].map((c) => `&#${c.charCodeAt(0)};`).join('')],
  ['HTML hex references', [...TOKEN].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join('')],
  ['split by line breaks in plain text', wrap(TOKEN, 7, '\r\n')],
  ['percent-encoded base64', encodeURIComponent(b64(padded(2)))],
];

describe('reversible transforms', () => {
  for (const [name, text] of CORPUS) {
    it(`recognizes ${name}`, () => {
      const body = `head ${text} tail`;
      assert.equal(r.findSecret(body), true, body);
      const out = r.redactText(body);
      assert.ok(out.includes(M), out);
      assert.equal(r.findSecret(out), false, out);
      assert.equal(r.redactText(out), out, 'idempotent');
      assert.ok(out.startsWith('head ') && out.endsWith(' tail'), out);
    });
  }

  it('keeps the text around a wrapped form', () => {
    assert.equal(r.redactText(`a\n${wrap(TOKEN, 9, '\n')}\nb`), `a\n${M}\nb`);
  });

  it('leaves ordinary wrapped text, escapes and hex alone', () => {
    const texts = ['line one\r\nline two', '\\u0041\\n%20&amp; 0123456789abcdef', wrap(b64('nothing secret here at all, really'), 8, '\n'), 'DEADBEEF:cafe:f00d'];
    for (const t of texts) assert.equal(r.redactText(t), t);
  });

  it('finds the token with each character escaped its own way and whitespace anywhere between', () => {
    const hex2 = (c: string): string => c.charCodeAt(0).toString(16).padStart(2, '0');
    const ways: ((c: string) => string)[] = [
      (c) => c,
      (c) => `\\u${hex2(c).padStart(4, '0')}`,
      (c) => `\\u${hex2(c).padStart(4, '0').toUpperCase()}`,
      (c) => `\\x${hex2(c)}`,
      (c) => `%${hex2(c)}`,
      (c) => `%${hex2(c).toUpperCase()}`,
      (c) => `&#${c.charCodeAt(0)};`,
      (c) => `&#x${hex2(c)};`,
    ];
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: ways.length - 1 }), { minLength: TOKEN.length, maxLength: TOKEN.length }),
        fc.array(fc.constantFrom('', '', '', ' ', '\n', '\r\n', '\t'), { minLength: TOKEN.length, maxLength: TOKEN.length }),
        // A backslash right before the form would be read as the start of an escape (see docs/threat-model.md).
        fc.string({ maxLength: 20 }).filter((t) => !t.endsWith('\\')),
        (how, gaps, around) => {
          const encoded = [...TOKEN].map((c, i) => ways[how[i]!]!(c) + gaps[i]!).join('');
          const out = r.redactText(`${around}${encoded}${around}`);
          assert.ok(out.includes(M), out);
          assert.equal(r.findSecret(out), false, out);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('finds the token in base64 wrapped at any width, with CRLF or LF, at any offset', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.constantFrom('\n', '\r\n', ' ', '\t'), fc.string({ maxLength: 40 }), fc.string({ maxLength: 40 }), (width, eol, before, after) => {
        const text = wrap(b64(`${before}${TOKEN}${after}`), width, eol);
        const out = r.redactText(text);
        assert.equal(r.findSecret(out), false);
        assert.ok(!Buffer.from(out.replace(/\[REDACTED:api\]|\s/g, ''), 'base64').includes(TOKEN.slice(2, -2)));
      }),
      { numRuns: 300 },
    );
  });
});

describe('base64 KEYFILE over SSH', () => {
  const pem = [
    '-----BEGIN OPENSSH PRIVATE KEY-----',
    'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
    'QyNTUxOQAAACBzZWNyZXQtY2FuYXJ5LWtleS1ib2R5LWxpbmUtdHdvAAAAAAAAAAAAAAAA',
    'QyNTUxOQAAACBzZWNyZXQtY2FuYXJ5LWtleS1ib2R5LWxpbmUtdGhyZWUAAAAAAAAAAAAA',
    'AAAE',
    '-----END OPENSSH PRIVATE KEY-----',
    '',
  ].join('\n');
  const key = { meta: { name: 'box-key', kind: 'ssh_key' as const, fields: {} }, secret: { private_key: Buffer.from(pem) } };
  const rk = createRedactor(injectedForms(key));
  const files: [string, string][] = [
    ['as stored', pem],
    ['with CRLF', pem.replace(/\n/g, '\r\n')],
    ['without the final newline', pem.trimEnd()],
  ];
  for (const [name, file] of files) {
    it(`redacts the whole key in 76-column base64 of the key file ${name}`, () => {
      const out = rk.redactText(wrap(b64(file), 76, '\n') + '\n');
      assert.ok(out.includes('[REDACTED:box-key]'), out);
      const left = out.replace(/\[REDACTED:box-key\]/g, '').replace(/\s/g, '');
      assert.ok(left.length <= 8, `left ${JSON.stringify(left)}`);
    });
  }
});

describe('redactCut: a secret at the cap', () => {
  const CAP = 200;
  /** What a body of `pad` characters, the token, and filler, read past the cap, leaves after redaction and the cut. */
  const cutAt = (pad: number, filler = '-'): string => {
    const window = `${filler.repeat(pad)}${TOKEN}${filler.repeat(CAP + r.readPastCapBytes)}`;
    return r.redactCut(window, CAP);
  };

  it('reads past the cap far enough for every form', () => {
    assert.ok(r.readPastCapBytes >= 3 * TOKEN.length);
  });

  it('moving the offset byte by byte recovers nothing', () => {
    const seen = new Set<string>();
    for (let pad = CAP - TOKEN.length - 2; pad <= CAP + 2; pad++) {
      const out = cutAt(pad);
      assert.ok(out.length <= CAP, `${pad}: ${out.length}`);
      const tail = out.replace(/^-*|-*$/g, '');
      assert.ok(tail === '' || tail === M, `offset ${pad} left ${JSON.stringify(tail)}`);
      seen.add(tail);
    }
    assert.ok(seen.has(M));
  });

  it('never ends in a prefix of a recognized form (encoded, wrapped, escaped)', () => {
    const encodings: ((s: string) => string)[] = [(s) => s, (s) => hexOf(s), (s) => b64(s), (s) => encodeURIComponent(s), (s) => [...s].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')];
    fc.assert(
      fc.property(fc.nat({ max: encodings.length - 1 }), fc.integer({ min: 1, max: 250 }), fc.constantFrom('', '\n', '\r\n'), (which, pad, eol) => {
        const form = encodings[which]!(TOKEN);
        // Line breaks inside an escape sequence would break the escape itself: only plain, hex and base64 are wrapped.
        const wrapped = eol === '' || which > 2 ? form : wrap(form, 11, eol);
        const window = `${'~'.repeat(pad)}${wrapped}${'~'.repeat(2 * CAP)}`;
        const out = r.redactCut(window, CAP);
        const tail = out.replace(/^~*/, '');
        assert.ok(tail === '' || tail === M || tail.startsWith(M), `left ${JSON.stringify(tail)}`);
      }),
      { numRuns: 400 },
    );
  });

  it('strips a partial form at the cut even when nothing follows it', () => {
    assert.equal(r.redactCut(`abc ${TOKEN.slice(0, 20)}`, 1000), `abc ${TOKEN.slice(0, 20)}`, 'not cut: the whole text is kept');
    assert.equal(r.redactCut(`abc ${TOKEN.slice(0, 20)}zzzz`, 24), 'abc ');
  });
});
