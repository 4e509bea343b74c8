/**
 * Benchmark: the team queries in PostgreSQL (`audit … --from`; docs/teams.md)
 * on BENCH_PG_ENTRIES shipped entries (default 1,000,000) over BENCH_PG_HOMES
 * homes (default 4). A real PostgreSQL (test/helpers/postgres.ts: Debian's
 * server, a Unix socket, a temp dir) gets the schema (`--init-schema`'s
 * SHIP_SCHEMA), a server-side fill through the copy trigger
 * (test/helpers/team-plans.ts), ANALYZE; then every team query, the very
 * text the CLI sends, runs under `EXPLAIN (ANALYZE, FORMAT JSON)`: its plan's
 * nodes and its execution time are printed, and the run exits 1 when a plan
 * scans postern_entries (Seq Scan) or misses the index it is meant to use.
 * Part of `npm run bench:audit`; skipped (exit 0, said why) without a
 * PostgreSQL server to start. Shared machines are noisy: read the orders of
 * magnitude.
 */
import pg from 'pg';
import { systemClock } from '../../src/clock/index.js';
import { SHIP_SCHEMA } from '../../src/journal/ship/schema.js';
import { postgresAvailable, startPostgres } from '../../test/helpers/postgres.js';
import { describePlan, fillShipped, planOf, teamPlanCases } from '../../test/helpers/team-plans.js';

const ENTRIES = Number(process.env['BENCH_PG_ENTRIES'] ?? 1_000_000);
const HOMES = Number(process.env['BENCH_PG_HOMES'] ?? 4);
const t = (): number => systemClock.monotonicMs();
const secs = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

const avail = postgresAvailable();
if (!avail.ok) {
  console.log(`team queries in PostgreSQL: skipped (${avail.why})`);
  process.exit(process.env['POSTERN_REQUIRE_POSTGRES'] === '1' ? 1 : 0);
}
if (!(Number.isSafeInteger(ENTRIES) && ENTRIES >= 10_000 && Number.isSafeInteger(HOMES) && HOMES >= 2 && HOMES <= 100)) {
  console.error('BENCH_PG_ENTRIES is a whole number of at least 10000, BENCH_PG_HOMES one from 2 to 100');
  process.exit(2);
}

const db = await startPostgres();
let failed = 0;
try {
  await db.admin('CREATE DATABASE bench');
  await db.admin(SHIP_SCHEMA, 'bench');
  const t0 = t();
  const calls = await fillShipped((sql) => db.admin(sql, 'bench'), ENTRIES, HOMES);
  const filled = t() - t0;
  const client = new pg.Client({ connectionString: db.url('admin', 'bench') });
  await client.connect();
  try {
    const size = (await client.query(`SELECT count(*)::int AS n, pg_size_pretty(pg_table_size('postern_entries')) AS heap, pg_size_pretty(pg_indexes_size('postern_entries')) AS idx FROM postern_entries`)).rows[0] as { n: number; heap: string; idx: string };
    console.log(`team queries in PostgreSQL: ${size.n.toLocaleString('en')} shipped entries over ${HOMES} homes (${calls.toLocaleString('en')} calls each), filled, vacuumed and analyzed in ${secs(filled)} (the copy trigger included); table ${size.heap}, its indexes ${size.idx}`);
    for (const c of teamPlanCases(calls)) {
      const p = await planOf(client, c);
      const bad = p.seqScans > 0 || p.missing.length > 0;
      if (bad) failed++;
      console.log(`  ${bad ? 'FAIL' : 'ok  '} ${c.name.padEnd(34)} ${p.ms.toFixed(2).padStart(9)} ms  ${describePlan(p)}${p.missing.length > 0 ? `  (does not use ${p.missing.join(', ')})` : ''}`);
    }
  } finally {
    await client.end();
  }
} finally {
  await db.stop();
}
if (failed > 0) {
  console.error(`${failed} team quer${failed === 1 ? 'y does' : 'ies do'} not use the index meant for it (or scan postern_entries)`);
  process.exit(1);
}
