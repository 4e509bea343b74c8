// The entry of one test process that runs several unit test files one after
// another (scripts/run-tests.mjs): each file is imported in turn, so its
// top-level tests join node's test runner in this process and run in order.
// Sharing a process saves each file the start of a node process and the
// loading of its dependencies; files that need a process of their own say
// `@isolated` in their header and are never grouped.
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';

for (const file of process.argv.slice(2)) await import(pathToFileURL(resolve(file)).href);
