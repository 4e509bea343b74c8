/** The one shape of the examples block after a command's `--help`. */
export function examples(lines: readonly string[], title = 'Examples'): string {
  return `\n${title}:\n${lines.map((l) => `  ${l}`).join('\n')}`;
}
