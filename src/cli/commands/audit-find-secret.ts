/**
 * `postern audit find-secret NAME`: did this credential's value — in any form
 * the redactor recognizes — ever reach a call's arguments, its result or an
 * error, and in which calls?
 *
 * Answered only from what the daemon recorded at redaction time (journal
 * `exposures`: the credential, the keyed fingerprint of the value found,
 * where); the secret is never stored, and a `[REDACTED:NAME]` marker that an
 * agent typed or a target returned is not an exposure. With `--unlock` the
 * passphrase opens the vault to fingerprint the credential's current value,
 * so each exposure is told apart: the current value (rotate it), an earlier
 * value (rotated since), or a value fingerprinted under an earlier data key
 * (before a `postern passwd`: not comparable). Without it, exposures are
 * listed by credential name. Read-only; nothing is written.
 */
import type { Command } from 'commander';
import type { ExposureEntry, ExposurePlace, Journals } from '../../journal/index.js';
import { PosternError } from '../../rules/errors.js';
import { exposureKeyId, parseFingerprint, valueFingerprint } from '../../redaction/index.js';
import { openVault } from '../../vault/index.js';
import { contextFor, type CliContext } from '../context.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { renderTable } from '../table.js';
import { teamExposed } from './audit-team.js';

/** What `audit.ts` lends this command (kept there: one home for opening the journals and reading times). */
interface AuditHelpers {
  openAudit(ctx: CliContext): Journals | null;
  withJournals<T>(j: Journals, fn: (j: Journals) => T): T;
  parseTime(flag: string, v: string | undefined, now: Date): string | undefined;
}

/** How an exposure's value compares with the credential in the vault now. */
type ValueMatch = 'current' | 'earlier_value' | 'earlier_key' | 'not_in_vault' | 'unchecked';

interface ExposedCall {
  readonly call_id: string;
  readonly tool: string;
  readonly session_id: string | null;
  readonly first_at: string;
  readonly in: readonly ExposurePlace[];
  readonly value: ValueMatch;
}

/** At most this many calls are listed; the count covers all. */
const MAX_LISTED = 1_000;
const PLACES: readonly ExposurePlace[] = ['arguments', 'result', 'error'];
const MATCH_ORDER: readonly ValueMatch[] = ['current', 'earlier_value', 'earlier_key', 'not_in_vault', 'unchecked'];

/** What the vault says now: the fingerprint of the current value (undefined: no such credential) and the key id. */
interface VaultView {
  readonly fingerprint: string | undefined;
  readonly keyId: string;
}

function classify(fp: string | null, view: VaultView | undefined): ValueMatch {
  if (view === undefined) return 'unchecked';
  if (view.fingerprint === undefined) return 'not_in_vault';
  if (fp === view.fingerprint) return 'current';
  const parsed = fp === null ? undefined : parseFingerprint(fp);
  return parsed !== undefined && parsed.keyId === view.keyId ? 'earlier_value' : 'earlier_key';
}

/** The calls whose entries recorded an exposure of `name`, grouped by call, in journal order. */
function exposedCalls(entries: Iterable<ExposureEntry>, name: string, since: string | undefined, view: VaultView | undefined): { calls: ExposedCall[]; total: number } {
  const byCall = new Map<string, { call: Omit<ExposedCall, 'in' | 'value'>; in: Set<ExposurePlace>; value: ValueMatch }>();
  for (const e of entries) {
    if (since !== undefined && e.at < since) continue;
    for (const x of e.exposures) {
      if (x.credential !== name) continue;
      const value = classify(x.fingerprint, view);
      let c = byCall.get(e.call_id);
      if (c === undefined) {
        c = { call: { call_id: e.call_id, tool: e.tool, session_id: e.session_id, first_at: e.at }, in: new Set(), value };
        byCall.set(e.call_id, c);
      }
      for (const p of x.in) c.in.add(p);
      // The most telling value wins: the current one first.
      if (MATCH_ORDER.indexOf(value) < MATCH_ORDER.indexOf(c.value)) c.value = value;
    }
  }
  const all = [...byCall.values()].map((c) => ({ ...c.call, in: PLACES.filter((p) => c.in.has(p)), value: c.value }));
  return { calls: all.slice(0, MAX_LISTED), total: all.length };
}

async function vaultView(ctx: CliContext, name: string): Promise<VaultView> {
  const pass = await ctx.unlockPassphrase();
  const vault = await openVault(ctx.paths.vault, pass, ctx.vault).finally(() => pass.fill(0));
  try {
    const key = vault.deriveKey('secret-exposure');
    const cred = vault.get(name);
    return { fingerprint: cred === undefined ? undefined : valueFingerprint(key, cred), keyId: exposureKeyId(key) };
  } finally {
    vault.lock();
  }
}

const VALUE_TEXT: Record<ValueMatch, string> = {
  current: 'CURRENT value',
  earlier_value: 'an earlier value',
  earlier_key: 'not comparable (before a passphrase change)',
  not_in_vault: 'the credential is no longer in the vault',
  unchecked: 'not checked (--unlock)',
};

function summary(name: string, total: number, calls: readonly ExposedCall[], checked: boolean): string {
  if (total === 0) return `credential ${name}: no recorded exposure — its value was never found in an argument, a result or an error`;
  const current = calls.filter((c) => c.value === 'current').length;
  const head = `credential ${name}: found in ${total} call${total === 1 ? '' : 's'}`;
  if (!checked) return `${head} (values not compared: with --unlock, the current value is told apart from earlier ones)`;
  return current > 0 ? `${head}; ${current} with the CURRENT value: rotate it (\`postern secret rotate ${name}\`)` : `${head}; none with the current value`;
}

export function registerFindSecret(audit: Command, h: AuditHelpers): void {
  audit
    .command('find-secret <name>')
    .description("did this credential's value (in any form the redactor recognizes) reach a call's arguments, result or errors? Lists the calls, from what was recorded at redaction time")
    .option('--unlock', "ask for the passphrase to tell the credential's current value from earlier ones")
    .option('--since <time>', 'journaled at or after this ISO 8601 time or age (2h, 7d)')
    .option('--from <url>', 'across every home shipped to this PostgreSQL database (postgres://…; docs/teams.md); values are not compared')
    .option('--home <home>', 'with --from: this home only (its name, id or id prefix)')
    .option('--json', 'print JSON')
    .action(async (name: string, o: { unlock?: boolean; since?: string; json?: boolean; from?: string; home?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(name)) throw new PosternError('USAGE', `${clean(JSON.stringify(name), 80)} is not a credential name`);
      if (o.from === undefined && o.home !== undefined) throw new PosternError('USAGE', '--home goes with --from');
      if (o.from !== undefined && o.unlock === true) throw new PosternError('USAGE', "--unlock compares with this home's vault: not with --from (each home has its own)");
      const since = h.parseTime('--since', o.since, ctx.clock.now());
      const view = o.unlock === true ? await vaultView(ctx, name) : undefined;
      let found: { calls: (ExposedCall & { home?: string; home_id?: string })[]; total: number };
      if (o.from !== undefined) {
        const per = (await teamExposed({ from: o.from, ...(o.home === undefined ? {} : { home: o.home }) }, name, since)).map((p) => ({ home: p.home, value: exposedCalls(p.entries, name, since, undefined) }));
        const calls = per.flatMap((p) => p.value.calls.map((c) => ({ ...p.home, ...c })));
        found = { calls, total: per.reduce((n, p) => n + p.value.total, 0) };
      } else {
        const j = h.openAudit(ctx);
        found = j === null ? { calls: [], total: 0 } : h.withJournals(j, (jj) => exposedCalls(jj.activity.exposures(), name, since, view));
      }
      if (o.json === true) {
        ctx.out(jsonForTerminal({ credential: name, values_checked: view !== undefined, exposed_calls: found.total, calls: found.calls }));
        return;
      }
      ctx.out(clean(summary(name, found.total, found.calls, view !== undefined), 400));
      if (found.calls.length === 0) return;
      const homeCol = o.from === undefined ? [] : ['HOME'];
      ctx.out(
        renderTable(
          [...homeCol, 'CALL', 'AT', 'TOOL', 'SESSION', 'FOUND IN', 'VALUE'],
          found.calls.map((c) => [...(o.from === undefined ? [] : [clean(c.home ?? '-', 32)]), clean(c.call_id.slice(0, 8), 8), clean(c.first_at, 40), clean(c.tool, 64), clean((c.session_id ?? '-').slice(0, 8), 8), c.in.join(', '), VALUE_TEXT[c.value]]),
        ),
      );
      if (found.total > found.calls.length) ctx.out(`(the first ${found.calls.length} of ${found.total} calls are listed)`);
    });
}
