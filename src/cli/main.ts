#!/usr/bin/env node
/**
 * Entry point of the `postern` binary. `postern mcp` — the process an agent
 * host spawns — takes a fast path that loads only the shim (no commander, no
 * libsodium, no vault or journal code), so the host's spawn is as quick as a
 * bare MCP server's. Every other command goes through program.ts.
 */

// A reader that stops early (`postern catalog check | head`) closes the pipe:
// stop quietly, as other command-line tools do, instead of dying with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

const argv = process.argv.slice(2);
if (argv.length === 1 && argv[0] === 'mcp') {
  const { runMcp } = await import('./mcp-entry.js');
  await runMcp();
} else {
  const { main } = await import('./program.js');
  process.exitCode = await main(argv);
}
