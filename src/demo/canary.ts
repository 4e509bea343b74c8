/**
 * The demo's own proof that its secrets stayed in the vault: every text the
 * run produced (what it printed, what the agent received, the daemon's log,
 * the targets' request log) is searched for every form the redactor knows of
 * each demo credential — the value, its encodings, `Bearer <token>`, each
 * base64 line of the SSH key. Returns the names of the credentials found,
 * never anything of their values.
 */
import { createRedactor, injectedForms, type RedactableCredential } from '../redaction/index.js';

export function leakedCredentials(credentials: readonly RedactableCredential[], texts: readonly string[]): string[] {
  const found: string[] = [];
  for (const c of credentials) {
    const redactor = createRedactor(injectedForms(c));
    if (texts.some((text) => redactor.findSecret(text))) found.push(c.meta.name);
  }
  return found;
}
