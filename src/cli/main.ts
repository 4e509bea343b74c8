#!/usr/bin/env node
/** Entry point of the `postern` binary; everything else lives in program.ts. */
import { main } from './program.js';

// A reader that stops early (`postern catalog check | head`) closes the pipe:
// stop quietly, as other command-line tools do, instead of dying with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

process.exitCode = await main(process.argv.slice(2));
