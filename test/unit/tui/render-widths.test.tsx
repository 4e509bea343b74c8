/**
 * @isolated: ink (with CI=true) keeps a process open when two of these files share one.
 * Graphemes whose width terminals disagree on, rendered by a real terminal
 * emulator at 80×24 under three width tables (xterm.js's own, one that draws
 * every code point apart at its widest, one that joins marks and draws
 * emoji and skin tones 2 cells each): Thai and Indic clusters, toned emoji,
 * keycaps, flags, lone Hangul jamo, code points newer than a terminal's
 * table, East Asian ambiguous characters. No row wraps, no row begins with
 * agent text (a forged "✓ approved once by operator" row cannot appear), and
 * the header, the queue line and the countdown keep their rows.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { card } from './fake-client.js';
import { Screen, WIDTH_TABLES, type WidthTable } from './terminal.js';
import { FORGED, UNSETTLED, foreignStart, startOnScreen } from './own-rows.js';


function widthCard() {
  const corpus = UNSETTLED.join('');
  const value = `${corpus.repeat(3)}${FORGED}${corpus}${FORGED}`;
  return card({
    id: 'widths-0001',
    tool: `deploy${UNSETTLED.slice(0, 6).join('')}`,
    reasons: [value],
    session: { id: 'sess-widths', client_name: corpus, client_version: '👍🏽', pid: 1 },
    target: { kind: 'http', method: 'POST', origin: 'https://api.example.com', host: 'api.example.com', port: 443, path: `/v1/${corpus}`, query: [['q', value]], headers: [], body: value },
    raw_arguments: { body: value },
    normalized_arguments: { body: value },
  });
}

function assertPinned(screen: Screen, where: string): void {
  const rows = screen.rows();
  assert.deepEqual(screen.wrappedRows(), [], `${where}: the terminal wrapped a row`);
  assert.deepEqual(rows.map(foreignStart).filter((r) => r !== null), [], `${where}: rows that begin with agent text`);
  assert.match(rows[0] ?? '', /^Postern {2}1 Approvals \(1\)/, `${where}: the header row`);
  assert.match(rows[1] ?? '', /^Approval 1 of 1 · /, `${where}: the queue row`);
  assert.match(rows[2] ?? '', /^expires in \d/, `${where}: the countdown row`);
  for (const r of rows) assert.ok(!/^\S.*approved once by operator/.test(r) || /^(tool|reason|body|query|arguments) /.test(r), `${where}: a forged row: ${r}`);
}

describe('graphemes of unsettled width on three terminals (80×24)', () => {
  for (const widths of Object.keys(WIDTH_TABLES) as WidthTable[]) {
    it(`${widths}: the compact card and every page of the details keep Postern's rows`, async () => {
      const { screen, stdin, quit } = startOnScreen([widthCard()], new Screen(80, 24, widths));
      await screen.waitFor((t) => t.includes('Approval 1 of 1'), 'the card');
      assertPinned(screen, 'compact');
      // The first row under the countdown names the arguments and their sizes: the long body is plain to see.
      assert.match(screen.rows()[3] ?? '', /^arg sizes {3}body \d{3} chars \(LONG\)$/);
      assert.match(screen.text(), /^approval is not offered until every row is seen/m);
      stdin.type('x');
      await screen.waitFor((t) => t.includes('x compact'), 'details');
      for (let page = 0; page < 12; page++) {
        assertPinned(screen, `details page ${page}`);
        const before = screen.text();
        if (/rows \d+–(\d+) of \1/.test(before) || !before.includes('rows ')) break;
        stdin.type(' ');
        await screen.waitFor((t) => t !== before, 'the next page');
      }
      await quit();
    });
  }
});
