/**
 * `postern audit ship` (a one-off catch-up, or `--init-schema` by an admin
 * role) and `postern audit verify --from postgres://…` (docs/teams.md).
 *
 * Invariants:
 * - the connection string is never printed (only host/database); give the
 *   password through PGPASSWORD or ~/.pgpass rather than in the URL;
 * - shipping reads the journals read-only, like every audit command, so it
 *   runs beside a daemon that ships too: both insert the same rows, and the
 *   second insert changes nothing;
 * - verify judges each home with the local verification code (ship/verify.ts)
 *   and exits 1 on any finding.
 */
import { hostname } from 'node:os';
import type pg from 'pg';
import type { Command } from 'commander';
import { loadConfig } from '../../daemon/services/config.js';
import { connectShip, describeTarget, shipError } from '../../journal/ship/connect.js';
import { listHomes, openRemoteHome, selectHomes, type ShippedHome } from '../../journal/ship/remote.js';
import { SHIP_SCHEMA, shipGrants } from '../../journal/ship/schema.js';
import { shipPass } from '../../journal/ship/shipper.js';
import { describeGap, describeRow, verifyRemoteHome, type RemoteVerdict } from '../../journal/ship/verify.js';
import { CheckpointSigner, keyFingerprint } from '../../journal/checkpoint/signature.js';
import { vaultFacts } from './anchor.js';
import { PosternError } from '../../rules/errors.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { contextFor, type CliContext } from '../context.js';
import { noJournal, openAudit } from '../audit-options.js';
import { chainLine } from '../audit-render.js';

/** Runs `fn` with a connected client; a driver failure becomes SHIP_UNAVAILABLE naming only host/database. */
export async function withDatabase<T>(url: string, action: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = await connectShip(url);
  try {
    return await fn(client);
  } catch (e) {
    throw shipError(url, action, e);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The homes `--home` names in the database (all without it); none is USAGE. */
export async function homesFrom(client: pg.ClientBase, filter: string | undefined): Promise<ShippedHome[]> {
  const all = await listHomes(client);
  const chosen = selectHomes(all, filter);
  if (filter !== undefined && chosen.length === 0) throw new PosternError('INPUT_INVALID', `no home ${clean(filter, 64)} in the database (${all.length} home(s) shipped)`);
  return chosen;
}

function homeLabel(h: ShippedHome): string {
  return `${clean(h.name, 64)} (${clean(h.home_id.slice(0, 8), 8)})`;
}

interface ShipFlags {
  to?: string;
  initSchema?: boolean;
  grant?: string;
  acceptGap?: boolean;
  json?: boolean;
}

/** `--accept-gap`: the home's checkpoint key, from the vault (the passphrase is asked), for the gap's signed record. */
async function gapSigner(ctx: CliContext): Promise<{ signer: CheckpointSigner; at: Date }> {
  const f = await vaultFacts(ctx);
  try {
    return { signer: new CheckpointSigner(f.checkpointSeed), at: ctx.clock.now() };
  } finally {
    f.wipe();
  }
}

async function ship(ctx: CliContext, o: ShipFlags): Promise<void> {
  if (o.to === undefined) throw new PosternError('USAGE', 'name the database: --to postgres://role@host/db (the password from PGPASSWORD or ~/.pgpass)');
  const url = o.to;
  const where = describeTarget(url);
  if (o.grant !== undefined && o.initSchema !== true) throw new PosternError('USAGE', '--grant goes with --init-schema');
  if (o.acceptGap === true && o.initSchema === true) throw new PosternError('USAGE', '--accept-gap ships: not with --init-schema');
  if (o.initSchema === true) {
    await withDatabase(url, 'create the tables in', async (c) => {
      await c.query(SHIP_SCHEMA);
      if (o.grant !== undefined) await c.query(shipGrants(o.grant));
    });
    if (o.json === true) ctx.out(JSON.stringify({ database: where, schema: 'ready', granted: o.grant ?? null }));
    else ctx.out(`the postern_* tables are ready in ${where}${o.grant === undefined ? '' : `; ${clean(o.grant, 64)} may insert and select, nothing more`}`);
    return;
  }
  const config = await loadConfig(ctx.paths.config);
  const homeName = config.ship.home_name ?? hostname().slice(0, 64);
  const j = openAudit(ctx);
  if (j === null) {
    ctx.out(`${noJournal(ctx)}; nothing to ship`);
    return;
  }
  let accept: Awaited<ReturnType<typeof gapSigner>> | undefined;
  try {
    if (o.acceptGap === true) accept = await gapSigner(ctx);
  } catch (e) {
    j.close();
    throw e;
  }
  const p = await withDatabase(url, 'ship to', (c) => shipPass(c, { journals: j, checkpointsPath: ctx.paths.checkpoints, homeName }, { batch: config.ship.batch, ...(accept === undefined ? {} : { acceptGap: accept }) })).finally(() => {
    j.close();
    accept?.signer.close();
  });
  if (o.json === true) {
    ctx.out(jsonForTerminal({ database: where, home_name: homeName, ...p }));
    return;
  }
  for (const g of p.accepted_gaps ?? []) ctx.out(`accepted a gap: ${g.journal} entries ${g.after + 1} to ${g.base.seq} were pruned here before they were shipped; the database records it, signed by ${keyFingerprint(g.public_key)}, and \`audit verify --from\` reports it`);
  if (o.acceptGap === true && p.accepted_gaps === undefined) ctx.out('no gap to accept: nothing was pruned here before it was shipped');
  ctx.out(`shipped ${p.shipped.activity} activity and ${p.shipped.sessions} sessions entries and ${p.shipped.checkpoints} checkpoints to ${where} as ${clean(homeName, 64)} (home ${clean(p.home_id, 64)})`);
  ctx.out(`the database holds activity to seq ${p.remote.activity} (local head ${p.local.activity}), sessions to seq ${p.remote.sessions} (local head ${p.local.sessions})`);
}

/** `audit verify --from`: every selected home's chains, rows and checkpoints. */
export async function verifyFrom(ctx: CliContext, url: string, o: { home?: string; key?: string; json?: boolean }): Promise<void> {
  const results = await withDatabase(url, 'read from', async (c) => {
    const homes = await homesFrom(c, o.home);
    if (o.key !== undefined && homes.length !== 1) throw new PosternError('USAGE', '--key names one home\'s key: give --home too');
    const out = [];
    for (const h of homes) {
      const r = await openRemoteHome(c, h);
      try {
        out.push({ home: h, verdict: verifyRemoteHome(r, o.key) });
      } finally {
        r.close();
      }
    }
    return out;
  });
  const ok = results.every((r) => r.verdict.ok);
  if (o.json === true) {
    const homes = results.map(({ home, verdict: v }) => ({
      home_id: home.home_id,
      name: home.name,
      recorded_key: home.public_key === null ? null : keyFingerprint(home.public_key),
      ok: v.ok,
      sessions: v.sessions,
      activity: v.activity,
      rows: v.rows,
      gaps: v.gaps,
      checkpoint: { ok: v.checkpoint.ok, line: v.checkpoint.line, keys: v.checkpoint.inspection.walk.keys.map(keyFingerprint) },
      trusted_key: v.trust.key === null ? null : keyFingerprint(v.trust.key),
      key_pinned: v.trust.pinned,
      findings: v.findings,
    }));
    ctx.out(jsonForTerminal({ database: describeTarget(url), ok, homes }));
  } else {
    if (results.length === 0) ctx.out(`no home has shipped to ${describeTarget(url)} yet; nothing to verify`);
    for (const { home, verdict: v } of results) {
      ctx.out(`home ${homeLabel(home)}: ${v.ok ? 'ok' : 'FINDINGS'}`);
      ctx.out(`  ${chainLine('sessions', v.sessions)}`);
      ctx.out(`  ${chainLine('activity', v.activity)}`);
      for (const g of v.gaps) ctx.out(`  ${clean(describeGap(g), 400)}`);
      for (const f of v.rows.slice(0, 20)) ctx.out(`  ${describeRow(f)}`);
      if (v.rows.length > 20) ctx.out(`  … and ${v.rows.length - 20} more rows`);
      ctx.out(`  checkpoint: ${v.checkpoint.ok ? 'ok' : 'MISMATCH'}: ${clean(v.checkpoint.line, 2000)}`);
      for (const f of v.findings) ctx.out(`  ${clean(f, 400)}`);
      ctx.out(`  ${trustLine(home, v.trust)}`);
    }
  }
  if (!ok) process.exitCode = 1;
}

/** The key a home's checkpoints were trusted under, always printed: a person compares it with `postern audit key` on that machine. */
function trustLine(home: ShippedHome, t: RemoteVerdict['trust']): string {
  if (t.key === null) return 'signed by: no key (no checkpoint line verifies)';
  const how = t.pinned ? 'the key given with --key' : 'not pinned: the first shipped checkpoint\'s key';
  const changes = t.keys.length > 1 ? `, then ${t.keys.slice(1).map(keyFingerprint).join(', ')} by key changes` : '';
  const recorded = home.public_key === null ? '' : t.keys.includes(home.public_key) ? '; the home\'s record names the same' : '; NOT the key the home\'s record names';
  return `signed by ${keyFingerprint(t.key)}${changes} (${how}${recorded}): compare with \`postern audit key\` on that machine`;
}

export function registerAuditShip(audit: Command): void {
  audit
    .command('ship')
    .description('copy both journals and their signed checkpoints to a PostgreSQL database, from where it stops (idempotent; the daemon does it by itself with config.yaml `ship`)')
    .option('--to <url>', 'the database: postgres://role@host/db (the password from PGPASSWORD or ~/.pgpass, not in the URL)')
    .option('--init-schema', 'create the postern_* tables instead (an admin role; changes nothing when they exist)')
    .option('--grant <role>', 'with --init-schema: let this role insert and select, nothing more')
    .option('--accept-gap', 'entries pruned here before they were shipped (SHIP_GAP): record the gap in the database, signed with this home\'s checkpoint key (asks the passphrase), and ship on; `audit verify --from` reports it')
    .option('--json', 'print JSON')
    .action(async (o: ShipFlags, cmd: Command) => {
      await ship(contextFor(cmd), o);
    });
}

