/**
 * How to point a real agent host at a Postern home: the MCP configuration
 * snippet with the absolute path of node and of this CLI's main.js (never
 * `npx postern`, which outside this repository would ask the public registry
 * for a package of that name) and `POSTERN_HOME`.
 */
import { fileURLToPath } from 'node:url';

/** The absolute path of the CLI entry point next to this module (dist/cli/main.js). */
export function cliEntryPoint(): string {
  return fileURLToPath(new URL('../cli/main.js', import.meta.url));
}

export function mcpSnippet(node: string, cli: string, home: string): string {
  return JSON.stringify({ mcpServers: { 'postern-demo': { command: node, args: [cli, 'mcp'], env: { POSTERN_HOME: home } } } });
}
