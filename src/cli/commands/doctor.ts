/**
 * `postern doctor`: reports, as ok or warning with what to do, the local
 * settings that protect or weaken the vault: home and vault permissions and
 * the host settings of DESIGN §2 (TIOCSTI, ptrace, core dumps), and whether
 * the journals match their anchor. With `--unlock` (passphrase) the anchor's
 * MAC and the vault generation are checked too: a vault older than the
 * anchor's generation (a restored copy) is reported, and the signed
 * checkpoints are judged against this vault's checkpoint key. Every page of
 * both journal files is read (journal/page-check.ts), so a damaged page the
 * daemon would refuse with JOURNAL_DAMAGED is named with the way back.
 * For each agent host configuration found (Claude Code, Codex, Gemini CLI),
 * whether the agent's shell is sandboxed away from the home, what it can
 * still reach, and the setting that closes each gap (docs/sandbox.md).
 * With the SSH gateway enabled, whether the user still holds private keys in
 * `~/.ssh` or an `SSH_AUTH_SOCK` agent with keys, either of which bypasses it.
 * Exits 0 unless `--strict` and something is not ok.
 */
import { JournalGap } from '../../journal/gap.js';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { examples } from '../help.js';
import { checkPrivateDir, checkPrivateFile, type PathCheck } from '../../home/permissions.js';
import { checkCoreDumps, checkPtraceScope, checkTiocsti, checkVaultKdf, type Finding } from '../../home/host-checks.js';
import { PRODUCTION_KDF_PROFILE, vaultKdf, type KdfParams, type KdfProfile } from '../../vault/index.js';
import { inspectAnchor, journalPresence } from '../../journal/anchor/index.js';
import { openJournals } from '../../journal/index.js';
import { checkJournalPages } from '../../journal/page-check.js';
import { describeCheckpointInspection, inspectCheckpoints } from '../../journal/checkpoint/inspect.js';
import { publicKeyOf } from '../../journal/checkpoint/signature.js';
import { checkpointsShortOfVault } from '../../journal/checkpoint/vault-mark.js';
import { inspectClaims } from '../../journal/anchor/verified.js';
import type { RecordedJournal } from '../../journal/anchor/index.js';
import { isPosternError } from '../../rules/errors.js';
import { contextFor } from '../context.js';
import { describeInspection, vaultFacts } from './anchor.js';
import { renderTable } from '../table.js';
import { shipFinding } from '../ship-status.js';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { configFile, type Places } from '../setup/hosts.js';
import { claudeShellFinding, codexShellFinding, geminiShellFinding, type FoundConfig } from '../setup/sandbox.js';
import { readAcceptance, readCatalogFile, type CatalogFile } from '../../home/catalog-store.js';
import { sequenceOf, type StoredRecord } from '../../contracts/index.js';
import { loadConfig } from '../../daemon/services/config.js';
import { allowedAccountFindings, allowedAccounts, sshBypassFindings } from '../ssh-bypass.js';
import { AGENT_USERS, judgeAgentUsers } from '../../home/agent-users.js';
import { readMacdRecord } from '../../home/macd-record.js';
import { operatorUser } from '../../daemon/pipeline/agent-user.js';

async function readOptional(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

function pathFinding(check: string, c: PathCheck, missingIsOk: boolean): Finding {
  if (c.ok) return { status: 'ok', check, detail: `${c.path} is private (${c.mode.toString(8)})` };
  if (missingIsOk && c.problem === 'does not exist') {
    return { status: 'ok', check, detail: `${c.path} does not exist yet` };
  }
  return { status: 'warning', check, detail: `${c.path} ${c.problem}`, fix: c.fix };
}

/**
 * Whether the journal files can be read at all: a damaged page (JOURNAL_DAMAGED) is named here,
 * with what to do, rather than only as an anchor that "could not be inspected".
 */
function journalFilesThere(journalDir: string): boolean {
  try {
    return journalPresence(journalDir).kind === 'complete';
  } catch {
    return false; // the anchor finding names what cannot be inspected
  }
}

/** The way back from a damaged journal file (docs/audit.md, "A damaged journal"). */
const DAMAGED_FIX = 'stop the daemon and keep a copy of the journal directory; `postern audit verify` names the unreadable entries, `postern audit salvage DIR --out FILE` copies every entry that still reads; then `postern anchor restore-journal BACKUP` or `postern anchor new-journal`; docs/audit.md ("A damaged journal")';

function journalFilesFinding(journalDir: string): Finding {
  const check = 'journal files';
  try {
    // Every page, not only the ones the last entries are on: what the daemon would refuse is named here first.
    checkJournalPages(journalDir);
    const j = openJournals(journalDir, { readonly: true });
    let gap: string | null;
    try {
      j.facts();
      gap = JournalGap.read(j.sessions).describe();
    } finally {
      j.close();
    }
    if (gap !== null) return { status: 'warning', check, detail: gap, fix: 'check the targets, then `postern anchor release-key TOOL KEY` or `postern anchor close-gap`; docs/audit.md ("Restoring an older journal")' };
    return { status: 'ok', check, detail: `${journalDir}: both journals open and every page reads` };
  } catch (e) {
    if (isPosternError(e) && e.code === 'JOURNAL_DAMAGED') return { status: 'warning', check, detail: `JOURNAL_DAMAGED: ${e.message}`, fix: DAMAGED_FIX };
    return { status: 'warning', check, detail: isPosternError(e) ? e.message : 'the journals could not be opened', fix: 'see docs/audit.md' };
  }
}

/** The anchor finding; `unlocked` carries the vault's key and generation when the passphrase was given. */
function anchorFinding(paths: { journalDir: string; anchor: string }, unlocked: { key: Uint8Array; generation: number } | undefined): Finding {
  const check = 'journal anchor';
  let line: { ok: boolean; line: string };
  try {
    line = describeInspection(inspectAnchor(paths.journalDir, paths.anchor, unlocked?.key, unlocked?.generation));
  } catch (e) {
    line = { ok: false, line: isPosternError(e) ? e.message : 'the journal could not be inspected' };
  }
  if (!line.ok) return { status: 'warning', check, detail: line.line, fix: 'see `postern anchor status` and docs/audit.md ("The anchor")' };
  if (unlocked === undefined) return { status: 'ok', check, detail: `${line.line}; run \`postern doctor --unlock\` to check its MAC and the vault generation` };
  return { status: 'ok', check, detail: line.line };
}

/** The checkpoint finding: the journals against the last signed checkpoint (under this vault's key, and against the vault's record of the file, when unlocked). */
function checkpointFinding(paths: { journalDir: string; checkpoints: string }, seed: Uint8Array | undefined, recorded?: RecordedJournal | null): Finding {
  const check = 'journal checkpoints';
  let line: { ok: boolean; line: string };
  try {
    const short = checkpointsShortOfVault(paths.checkpoints, recorded?.checkpoints);
    if (short !== null) return { status: 'warning', check, detail: short, fix: 'put back journal.checkpoints.jsonl from a backup, or `postern anchor new-journal`; the daemon will not start on this home; docs/audit.md ("Signed checkpoints")' };
    line = describeCheckpointInspection(inspectCheckpoints(paths.journalDir, paths.checkpoints, seed === undefined ? {} : { vaultKey: publicKeyOf(seed) }), false);
  } catch (e) {
    line = { ok: false, line: isPosternError(e) ? e.message : 'the checkpoints could not be inspected' };
  }
  if (!line.ok) return { status: 'warning', check, detail: line.line, fix: 'see `postern audit verify` and docs/audit.md ("Signed checkpoints")' };
  return { status: 'ok', check, detail: line.line };
}

/** The idempotency claims proved against the chain, as the daemon's start proves them (journal/anchor/verified.ts). */
function claimsFinding(journalDir: string, key: Uint8Array): Finding {
  const check = 'idempotency claims';
  let problem: string | null;
  try {
    problem = inspectClaims(journalDir, key);
  } catch (e) {
    problem = isPosternError(e) ? e.message : 'the claims could not be checked';
  }
  if (problem !== null) return { status: 'warning', check, detail: problem, fix: 'see `postern audit verify --unlock` and docs/audit.md ("The idempotency claims")' };
  return { status: 'ok', check, detail: 'every claim agrees with the chained entries' };
}

/**
 * Whether catalog.yaml is the accepted catalog: never accepted (agents see no tools), or edited since
 * the last acceptance (the daemon keeps the accepted copy). Read without the key: the record's MAC is
 * checked by the daemon and by `postern catalog show --verify`.
 */
async function catalogAcceptanceFinding(paths: { catalog: string; acceptedRecord: string }): Promise<Finding> {
  const check = 'catalog acceptance';
  let stored: StoredRecord;
  let file: CatalogFile | undefined;
  try {
    [stored, file] = await Promise.all([readAcceptance(paths), readCatalogFile(paths.catalog)]);
  } catch (e) {
    return { status: 'warning', check, detail: isPosternError(e) ? e.message : 'the catalog files could not be read', fix: 'check the permissions of the home' };
  }
  if (stored.kind === 'missing') {
    const first = file === undefined ? 'write catalog.yaml (`postern catalog new`), then run `postern catalog accept`' : 'review catalog.yaml, then run `postern catalog accept`';
    return { status: 'warning', check, detail: 'no catalog was ever accepted: the daemon serves agents no tools', fix: first };
  }
  if (stored.kind === 'malformed') return { status: 'warning', check, detail: stored.why, fix: 'run `postern catalog show --verify`; docs/catalog.md' };
  const seq = ` #${sequenceOf(stored.record)}`;
  if (file === undefined) return { status: 'ok', check, detail: `catalog.yaml is absent; the accepted catalog${seq} stays in use` };
  if (file.digest !== stored.record.digest) {
    return { status: 'warning', check, detail: `catalog.yaml differs from the accepted catalog${seq}: the daemon keeps using the accepted one`, fix: 'review the change with `postern catalog show`, then run `postern catalog accept` (or put the accepted file back)' };
  }
  return { status: 'ok', check, detail: `catalog.yaml is the accepted catalog${seq}` };
}

/** The vault header's cost, or undefined when there is no readable vault (the vault finding says why). */
async function headerKdf(path: string): Promise<KdfParams | undefined> {
  try {
    return await vaultKdf(path);
  } catch {
    return undefined;
  }
}

async function found(path: string): Promise<FoundConfig | undefined> {
  const text = await readOptional(path);
  return text === undefined ? undefined : { path, text };
}

/** For each agent host whose configuration is on this machine: whether its shell is sandboxed away from the home (src/cli/setup/sandbox.ts). */
async function agentShellFindings(home: string, p: Places): Promise<Finding[]> {
  const findings: Finding[] = [];
  const claude = (await Promise.all([join(p.userHome, '.claude', 'settings.json'), join(p.cwd, '.claude', 'settings.json'), join(p.cwd, '.claude', 'settings.local.json')].map(found))).filter((f) => f !== undefined);
  if (claude.length > 0) findings.push(claudeShellFinding(claude, home, p));
  const codex = await found(configFile('codex', 'user', p) ?? '');
  if (codex !== undefined) findings.push(codexShellFinding(codex, home));
  const gemini = (await found(join(p.cwd, '.gemini', 'settings.json'))) ?? (await found(configFile('gemini', 'user', p) ?? ''));
  if (gemini !== undefined) findings.push(geminiShellFinding(gemini, p.env));
  return findings;
}

/**
 * With the SSH gateway enabled in config.yaml: the ways around it (../ssh-bypass.ts) — the
 * operator's own `~/.ssh` and ssh-agent, and the `~/.ssh` of every OS user the allow list lets
 * on the shared agent socket (verified with the vault's key when unlocked: a list that does not
 * verify allows nobody, so nobody else is checked).
 */
async function gatewayBypassFindings(paths: { config?: string; agentUsers?: string }, p: Places, key?: Uint8Array): Promise<Finding[]> {
  if (paths.config === undefined) return [];
  const enabled = await loadConfig(paths.config).then(
    (c) => c.ssh_gateway.enabled,
    () => false,
  );
  if (!enabled) return [];
  const own = await sshBypassFindings(p.userHome, p.env);
  if (paths.agentUsers === undefined) return own;
  const listed = await readMacdRecord(paths.agentUsers, AGENT_USERS.schema).catch(() => ({ kind: 'malformed' as const }));
  const verdict = key === undefined ? (listed.kind === 'stored' ? { kind: 'allowed' as const, allowed: listed.stored.record.allowed } : { kind: 'none' as const }) : judgeAgentUsers(key, listed);
  if (verdict.kind !== 'allowed') return own;
  return [...own, ...(await allowedAccountFindings(await allowedAccounts(verdict.allowed, operatorUser())))];
}

async function runDoctor(
  paths: { home: string; vault: string; catalog: string; journalDir: string; anchor: string; checkpoints: string; runDir?: string; acceptedRecord?: string; config?: string; agentUsers?: string },
  unlocked?: { key: Uint8Array; generation: number; checkpointSeed?: Uint8Array; catalogMac?: Uint8Array; journal?: RecordedJournal | null },
  profile: KdfProfile = PRODUCTION_KDF_PROFILE,
): Promise<Finding[]> {
  const home = await checkPrivateDir(paths.home);
  const findings: Finding[] = [pathFinding('home', home, false)];
  let kdf: KdfParams | undefined;
  if (home.ok || home.problem !== 'does not exist') {
    const vault = await checkPrivateFile(paths.vault);
    findings.push(pathFinding('vault', vault, false));
    if (vault.ok) kdf = await headerKdf(paths.vault);
    findings.push(pathFinding('catalog', await checkPrivateFile(paths.catalog), true));
    if (paths.acceptedRecord !== undefined) findings.push(await catalogAcceptanceFinding({ catalog: paths.catalog, acceptedRecord: paths.acceptedRecord }));
    if (journalFilesThere(paths.journalDir)) findings.push(journalFilesFinding(paths.journalDir));
    findings.push(anchorFinding(paths, unlocked));
    findings.push(checkpointFinding(paths, unlocked?.checkpointSeed, unlocked?.journal));
    if (unlocked !== undefined) findings.push(claimsFinding(paths.journalDir, unlocked.key));
    if (paths.runDir !== undefined) findings.push(shipFinding({ runDir: paths.runDir, journalDir: paths.journalDir }));
  }
  findings.push(...checkVaultKdf(kdf, profile));
  findings.push(checkTiocsti(await readOptional('/proc/sys/dev/tty/legacy_tiocsti')));
  findings.push(checkPtraceScope(await readOptional('/proc/sys/kernel/yama/ptrace_scope')));
  findings.push(checkCoreDumps(await readOptional('/proc/self/limits')));
  const places: Places = { userHome: homedir(), cwd: process.cwd(), env: process.env, platform: process.platform };
  findings.push(...(await agentShellFindings(paths.home, places)));
  findings.push(...(await gatewayBypassFindings(paths, places, unlocked?.catalogMac)));
  return findings;
}

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check permissions and host settings that protect the vault')
    .addHelpText('after', examples([
      'postern doctor',
      'postern doctor --unlock --strict   # also the anchor MAC and the vault generation; exit 1 on any warning',
    ]))
    .option('--json', 'print JSON')
    .option('--strict', 'exit 1 when any check is not ok')
    .option('--unlock', "ask for the passphrase to check the journal anchor's MAC and the vault generation")
    .action(async (o: { json?: boolean; strict?: boolean; unlock?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const unlocked = o.unlock === true ? await vaultFacts(ctx) : undefined;
      const findings = await runDoctor(ctx.paths, unlocked, ctx.kdf).finally(() => unlocked?.wipe());
      if (o.json === true) {
        ctx.out(JSON.stringify(findings, null, 2));
      } else {
        ctx.out(
          renderTable(
            ['STATUS', 'CHECK', 'FINDING'],
            findings.map((f) => [f.status, f.check, f.status === 'ok' ? f.detail : `${f.detail}; fix: ${f.fix}`]),
          ),
        );
      }
      if (o.strict === true && findings.some((f) => f.status !== 'ok')) process.exitCode = 1;
    });
}
