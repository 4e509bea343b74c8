/**
 * Telling an operator who is away that a call waits: when a card opens, a
 * desktop notification (`notify-send`, when it is on the PATH) and, when the
 * operator configured one with the approval page, a webhook — an ntfy-style
 * POST whose body names the tool and whose `Click` header links to the page.
 *
 * Invariants: a notification carries the tool name (from the accepted
 * catalog, sanitized) and a link, never the call's arguments, target or
 * session — unless the operator opted in with `--webhook-arguments`, and then
 * only the normalized arguments, sanitized; nothing is sent through a shell;
 * a notification that fails or hangs (5 s) is logged once and never delays
 * or fails the call; the webhook URL comes only from the MAC'd page
 * authorization, never from a file an agent can edit.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { ApprovalQueue } from '../../approvals/queue.js';
import type { ApprovalCard } from '../../protocol/approvals.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';

interface NotifyOptions {
  readonly queue: ApprovalQueue;
  readonly webhook: { readonly url: string; readonly arguments: boolean } | null;
  /** The approval page's URL (the link), or null when it is not running. */
  readonly pageUrl: string | null;
  /** Where to look for notify-send (the daemon's PATH); null: no desktop notifications. */
  readonly path: string | null;
  readonly log: (line: string) => void;
}

function findOnPath(program: string, path: string | null): string | null {
  if (path === null) return null;
  for (const dir of path.split(delimiter)) {
    if (dir === '') continue;
    const p = join(dir, program);
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not here
    }
  }
  return null;
}

/** The webhook's body and headers for a card (the one place that decides what leaves the machine). */
export function webhookMessage(card: ApprovalCard, o: { pageUrl: string | null; arguments: boolean }): { body: string; headers: Record<string, string> } {
  const tool = clean(card.tool, 80);
  const lines = [`${tool} waits for approval (r${card.revision}${card.widening.length > 0 ? ', widens authority' : ''})`];
  if (o.arguments) lines.push(clean(JSON.stringify(card.normalized_arguments) ?? 'null', 1_000));
  const headers: Record<string, string> = { 'Content-Type': 'text/plain; charset=utf-8', Title: 'Postern: approval needed', Tags: 'lock' };
  if (o.pageUrl !== null) headers['Click'] = o.pageUrl;
  return { body: lines.join('\n'), headers };
}

export function startNotifications(o: NotifyOptions): () => void {
  const notifySend = findOnPath('notify-send', o.path);
  let warned = false;
  const warn = (what: string): void => {
    if (warned) return;
    warned = true;
    o.log(`notification: ${what} (further failures are not logged)`);
  };
  return o.queue.subscribe((e) => {
    if (e.type !== 'added') return;
    const card = e.card;
    if (notifySend !== null) {
      const child = spawn(notifySend, ['--app-name=postern', 'Postern: approval needed', `${clean(card.tool, 80)} waits for approval`], { stdio: 'ignore' });
      child.on('error', () => warn('notify-send failed'));
      child.unref();
    }
    const hook = o.webhook;
    if (hook !== null) {
      const m = webhookMessage(card, { pageUrl: o.pageUrl, arguments: hook.arguments });
      fetch(hook.url, { method: 'POST', body: m.body, headers: m.headers, redirect: 'manual', signal: AbortSignal.timeout(5_000) })
        .then((r) => {
          if (r.status >= 300) warn(`the webhook answered ${r.status}`);
          return r.body?.cancel();
        })
        .catch(() => warn('the webhook could not be reached'));
    }
  });
}
