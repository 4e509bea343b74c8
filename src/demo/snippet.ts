/**
 * How to point a real agent host at a Postern home: the MCP configuration
 * snippet with the absolute path of node and of this CLI's main.js (never
 * `npx postern`, which outside this repository would ask the public registry
 * for a package of that name) and `POSTERN_HOME`. The launch rule itself
 * lives in src/cli/setup (`postern setup`), and `postern demo` passes it in
 * (`DemoLaunch`), so the demo never imports the CLI; this is the demo's
 * one-line form.
 */

/** The launch rule, as the demo receives it from the command that runs it. */
export interface DemoLaunch {
  /** The absolute path of the CLI entry point (dist/cli/main.js), symlinks resolved. */
  readonly entry: string;
  /** The MCP server entry (`command`, `args`, `env`) that runs `postern mcp` on `home`. */
  mcpServer(home: string): Readonly<Record<string, unknown>>;
}

export function mcpSnippet(server: Readonly<Record<string, unknown>>): string {
  return JSON.stringify({ mcpServers: { 'postern-demo': server } });
}
