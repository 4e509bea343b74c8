/**
 * `postern mcp`: the stdio MCP endpoint, started both by the fast path of
 * main.ts and by the commander command (`postern --passphrase-file F mcp`).
 * Imports only the shim and the home's path layout: nothing here may pull in
 * commander, libsodium or code that handles secrets (test/unit/build).
 */
import { homePaths, resolveHome } from '../home/paths.js';
import { runShim } from '../mcp/shim.js';
import { VERSION } from '../version.js';

export async function runMcp(): Promise<void> {
  const paths = homePaths(resolveHome());
  await runShim({ socketPath: paths.agentSocket, home: paths.home, input: process.stdin, output: process.stdout, version: VERSION });
}
