/**
 * Run before ink loads — by `loadTui` (src/tui/load.ts), the way commands
 * open the TUI, and by the TUI's entry, which imports it first: ink draws nothing but the
 * last frame when it believes it runs in CI (a `CI` or
 * `CONTINUOUS_INTEGRATION` variable, common in containers and dev shells).
 * The TUI only ever runs on an interactive terminal — runTui refuses
 * anything else (TUI_NO_TTY) — so it is never "in CI": the detection is
 * turned off for this process.
 */
for (const name of ['CI', 'CONTINUOUS_INTEGRATION']) {
  if (name in process.env) process.env[name] = 'false';
}
export {};
