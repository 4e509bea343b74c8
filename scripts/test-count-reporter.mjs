// A node:test reporter for one test process (scripts/run-tests.mjs runs a
// file, or a group of unit files, in a child of its own): it writes nothing
// while the tests run and, at the end, one JSON line with the counts and each
// file's test time (the sum of its top-level tests), read by the parent for
// the run's totals and its slowest files.
//
// In a group process (test-group.mjs) it also watches for a process that
// stays open after its tests: once the group's files are all imported, no
// top-level test runs and no event came for 15 s, it names what holds the
// process open and exits 1.
import process from 'node:process';
import { clearInterval, setInterval } from 'node:timers';

const IMPORTED = Symbol.for('postern.test-group.imported');
const HELD_OPEN_MS = 15_000;

export default async function* countReporter(source) {
  let running = 0;
  let last = Date.now();
  const watch = setInterval(() => {
    const files = globalThis[IMPORTED];
    if (files === undefined || running > 0 || Date.now() - last < HELD_OPEN_MS) return;
    const held = process.getActiveResourcesInfo().join(', ');
    process.stderr.write(`test group (${files.join(' ')}): its tests ended ${HELD_OPEN_MS / 1000} s ago and the process is still held open (${held}): a test left something running\n`);
    process.exit(1);
  }, 1000).unref();
  const counts = { tests: 0, pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
  const files = {};
  for await (const event of source) {
    last = Date.now();
    // test:dequeue when a test begins to run, test:complete when it ends (test:start
    // and test:pass come later, when the test is reported).
    if (event.data?.nesting === 0 && event.type === 'test:dequeue') running += 1;
    if (event.data?.nesting === 0 && event.type === 'test:complete') running -= 1;
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const file = event.data.file ?? '?';
    if (event.data.nesting === 0) files[file] = (files[file] ?? 0) + (event.data.details?.duration_ms ?? 0);
    if (event.data.details?.type === 'suite') {
      // A failing suite with no failing test (a hook failed) is a failure too.
      if (event.type === 'test:fail' && event.data.details?.error?.failureType !== 'subtestsFailed') counts.fail += 1;
      continue;
    }
    counts.tests += 1;
    if (event.data.skip !== undefined && event.data.skip !== false) counts.skipped += 1;
    else if (event.data.todo !== undefined && event.data.todo !== false) counts.todo += 1;
    else if (event.type === 'test:pass') counts.pass += 1;
    else if (event.data.details?.error?.failureType === 'cancelledByParent') counts.cancelled += 1;
    else counts.fail += 1;
  }
  clearInterval(watch);
  yield `${JSON.stringify({ counts, files })}\n`;
}
