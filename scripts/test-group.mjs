// The entry of one test process that runs several unit test files one after
// another (scripts/run-tests.mjs): each file is imported in turn, so its
// top-level tests join node's test runner in this process and run in order.
// Sharing a process saves each file the start of a node process and the
// loading of its dependencies; files that need a process of their own say
// `@isolated` in their header and are never grouped.
//
// Once every file is imported, the count reporter (test-count-reporter.mjs,
// in this process) is told so: from then on, if no test runs and nothing has
// happened for 15 s, something a test left behind (a timer, a socket, a
// pending file operation) holds the process open, and it says what and exits
// 1 instead of hanging the run. (node:test's root `after` hook cannot be used
// for this: it runs as soon as the first file's tests end.)
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import process from 'node:process';

for (const file of process.argv.slice(2)) await import(pathToFileURL(resolve(file)).href);
globalThis[Symbol.for('postern.test-group.imported')] = process.argv.slice(2);
