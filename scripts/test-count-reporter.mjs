// A node:test reporter for one test process (scripts/run-tests.mjs runs a
// file, or a group of unit files, in a child of its own): it writes nothing
// while the tests run and, at the end, one JSON line with the counts and each
// file's test time (the sum of its top-level tests), read by the parent for
// the run's totals and its slowest files.
export default async function* countReporter(source) {
  const counts = { tests: 0, pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
  const files = {};
  for await (const event of source) {
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
  yield `${JSON.stringify({ counts, files })}\n`;
}
