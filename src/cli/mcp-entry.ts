/**
 * `postern mcp`: the stdio MCP endpoint, started both by the fast path of
 * main.ts and by the commander command (`postern --passphrase-file F mcp`).
 * Imports only the shim and the home's path layout: nothing here may pull in
 * commander, libsodium or code that handles secrets (test/unit/build).
 */
import { resolve } from 'node:path';
import { homePaths, resolveHome } from '../home/paths.js';
import { listingMemoryPath } from '../mcp/remembered-listing.js';
import { runShim } from '../mcp/shim.js';
import { VERSION } from '../version.js';

/**
 * The socket the shim connects to: the home's private agent socket, or
 * POSTERN_AGENT_SOCKET — the shared one (`<home>-agents/agent.sock`) for an
 * agent that runs as another OS user the operator allowed (docs/agent-users.md).
 */
function agentSocketPath(env: NodeJS.ProcessEnv = process.env): string {
  const named = env['POSTERN_AGENT_SOCKET'];
  return named !== undefined && named !== '' ? resolve(named) : homePaths(resolveHome(env)).agentSocket;
}

export async function runMcp(): Promise<void> {
  const paths = homePaths(resolveHome());
  const socketPath = agentSocketPath();
  await runShim({ socketPath, home: paths.home, input: process.stdin, output: process.stdout, version: VERSION, memoryPath: listingMemoryPath(socketPath) });
}
