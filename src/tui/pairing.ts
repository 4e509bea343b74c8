/**
 * Pairing a browser for the approval page from the TUI (P): the operator
 * names the device, the daemon opens a one-time code (`devices.pair`, the
 * same operation as `postern approvals pair`), and the footer shows the code,
 * the link and when it ends until the next key. Everything shown is the
 * daemon's answer checked against the protocol's schema and passed through
 * the terminal-text rules; the code is single use and lives five minutes, so
 * showing it on the operator's own screen is its purpose.
 */
import { sanitizeForTerminal } from '../rules/terminal-text.js';
import { DEVICE_NAME, pairingLink, PairingViewSchema } from './contract.js';
import type { PairingShown, Step, UiState } from './ui.js';

/** Enter in the name prompt: the request, or why not. */
export function pairDevice(ui: UiState, draft: string): Step {
  const name = draft.trim();
  if (name === '') return { ui: { ...ui, message: 'pairing cancelled: no name given' } };
  if (name.length > 64 || !DEVICE_NAME.test(name)) return { ui: { ...ui, message: 'a device name is printable ASCII words, at most 64 characters' } };
  return { ui: { ...ui, message: `opening a pairing for ${name}…` }, request: { op: 'devices.pair', params: { name }, done: `pairing opened for ${name}` } };
}

/** The daemon's answer to `devices.pair`, or null when it is not one. */
export function pairingShown(result: unknown): PairingShown | null {
  const r = PairingViewSchema.safeParse(result);
  if (!r.success) return null;
  const p = r.data;
  return { name: p.name, code: p.code, link: pairingLink(p), expiresAt: p.expires_at, tlsSha256: p.tls_sha256 };
}

/** The footer rows of a pairing: what to type or open, and what to check. */
export function pairingRows(p: PairingShown): string[] {
  const t = (s: string, max: number): string => sanitizeForTerminal(s, max);
  return [
    `pair ${t(p.name, 64)}: code ${t(p.code, 32)} (single use, until ${t(p.expiresAt, 40)}; any key hides it)`,
    `open ${t(p.link, 300)}`,
    ...(p.tlsSha256 === null ? [] : [`certificate SHA-256 ${t(p.tlsSha256, 64)}`]),
  ];
}
