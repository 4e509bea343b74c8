// The entry of one test process that runs several unit test files one after
// another (scripts/run-tests.mjs): each file is imported in turn, so its
// top-level tests join node's test runner in this process and run in order.
// Sharing a process saves each file the start of a node process and the
// loading of its dependencies; files that need a process of their own say
// `@isolated` in their header and are never grouped.
//
// Once every test has ended, the process must end too: if something a test
// left behind (a timer, a socket, a pending file operation) still holds it
// open 15 s later, it says so and exits 1 instead of hanging the run.
import { after } from 'node:test';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import process from 'node:process';
import { setTimeout } from 'node:timers';

after(() => {
  setTimeout(() => {
    const held = process.getActiveResourcesInfo().join(', ');
    process.stderr.write(`test group (${process.argv.slice(2).join(' ')}): the tests ended 15 s ago and the process is still held open (${held}): a test left something running\n`);
    process.exit(1);
  }, 15_000).unref();
});

for (const file of process.argv.slice(2)) await import(pathToFileURL(resolve(file)).href);
