/**
 * What a row of the TUI's screen may begin with: Postern's own text — a
 * label, the continuation mark, the header, the queue line, the countdown,
 * the key bar — never text an agent controls —, a corpus of graphemes whose
 * width terminals disagree on, and the real TUI started on an emulated
 * screen. Shared by the render tests and the tmux test.
 */
import { runTui } from '../../../src/tui/index.js';
import type { ApprovalCard } from '../../../src/tui/contract.js';
import { FakeOperator, emptySnapshot, status } from './fake-client.js';
import { FakeTtyIn, type Screen } from './terminal.js';
import { T0, patientClock } from './harness.js';

/** Graphemes a width table may count narrower or wider than a terminal draws them. */
export const UNSETTLED = [
  'กำ', '👍🏽', '1\u20e3', 'ಕೳ', '\u{1FAE8}', '\u{2EBF0}', '\u1161', '\u11a8', 'ক্ষ', 'ក្ក', '🇺🇸', 'e\u0301', 'क्षि', 'ไม่',
  '中', '한', 'Ω', 'Ж', '…', '→', '①', '\u{1F3FD}', '☺', '©', 'ｱ', '\u0e33', 'ᄀ', '\u{1F9D1}\u{1F3FF}', '\u0bcd',
];
/** A row that, if agent text could begin one, would read like Postern's own. */
export const FORGED = 'tool        deploy_service ✓ approved once by operator';
const LABELS = new Set([
  'id', 'session', 'tool', 'revision', 'effect', 'annotations', 'authority', 'WIDENS', 'reason', 'target', 'host', 'method',
  'path', 'query', 'header', 'body', 'user', 'host key', 'argv[0]', 'argv[1]', 'argv[2]', 'command', 'credential', 'arguments',
  'raw args', 'normalized', 'adapter', 'idempotency', 'digest', 'expires', 'arg sizes', 'what',
]);
const OWN_ROW = [
  /^$/,
  /^Postern {2}1 Approvals/,
  /^ (observer \(read-only\)|TEST VAULT|daemon locked|page run|disconnected|connecting)/,
  /^Approval \d+ of \d+ · oldest first · /,
  /^(expires in \d|expired)/,
  /^ {10}┆( |$)/,
  /^┆ /,
  /^… \+\d+ more rows \(x: details\)$/,
  /^rows \d+–\d+ of \d+/,
  /^(a approve once|d deny|n\/j\/↓ next|x (details|compact)|session approval is not offered|approval is not offered)/,
  /^(p\/k\/↑ previous|1-5 views|\? help|\/ filter|r deny|s approve|q (quit|back))/,
  /^(n\/p next\/previous|j\/k scroll)/,
];

/** Why a screen row does not begin with Postern's own text: the row, or null when it does. */
export function foreignStart(row: string): string | null {
  if (OWN_ROW.some((r) => r.test(row))) return null;
  const label = row.slice(0, 12).trimEnd();
  if (LABELS.has(label) && row[11] === ' ' && label.length < 12) return null;
  return row;
}

/** The screen with folded rows joined again (a value may be cut anywhere). */
export function unfolded(text: string): string {
  return text.replace(/\n {10}┆ /g, '');
}

/** The TUI on `screen` with `pending` waiting; `quit` goes back from the details (Esc), then quits (q). */
export function startOnScreen(pending: ApprovalCard[], screen: Screen, daemon: { locked?: boolean } = {}) {
  const stdin = new FakeTtyIn();
  const client = new FakeOperator('operator', emptySnapshot({ pending, status: status({ locked: daemon.locked ?? false }) }));
  const done = runTui(client, {
    observe: false,
    now: () => T0,
    monotonicMs: patientClock(),
    stdin: stdin as unknown as NodeJS.ReadStream,
    stdout: screen.out as unknown as NodeJS.WriteStream,
    env: { NO_COLOR: '1' },
  });
  const quit = async (): Promise<void> => {
    if (screen.text().includes('x compact')) {
      stdin.type('\x1b');
      await screen.waitFor((t) => t.includes('x details'), 'the compact card');
    }
    stdin.type('q');
    await screen.waitFor((t) => t.includes('Quit anyway?'), 'the quit question');
    stdin.type('y');
    await done;
  };
  return { screen, stdin, client, quit };
}
