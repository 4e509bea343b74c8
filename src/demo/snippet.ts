/**
 * How to point a real agent host at a Postern home: the MCP configuration
 * snippet with the absolute path of node and of this CLI's main.js (never
 * `npx postern`, which outside this repository would ask the public registry
 * for a package of that name) and `POSTERN_HOME`. The launch rule itself
 * lives in src/cli/setup (`postern setup`); this is the demo's one-line form.
 */
import { cliEntry, launchSpec } from '../cli/setup/launch.js';
import { jsonEntry } from '../cli/setup/hosts.js';

/** The absolute path of the CLI entry point (dist/cli/main.js), symlinks resolved. */
export function cliEntryPoint(): string {
  return cliEntry();
}

export function mcpSnippet(node: string, cli: string, home: string): string {
  return JSON.stringify({ mcpServers: { 'postern-demo': jsonEntry('json', launchSpec(home, { node, entry: cli })) } });
}
