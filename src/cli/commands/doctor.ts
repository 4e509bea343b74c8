/**
 * `postern doctor`: reports, as ok or warning with what to do, the local
 * settings that protect or weaken the vault: home and vault permissions and
 * the host settings of DESIGN §2 (TIOCSTI, ptrace, core dumps).
 * Exits 0 unless `--strict` and something is not ok.
 */
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { checkPrivateDir, checkPrivateFile, type PathCheck } from '../../home/permissions.js';
import { checkCoreDumps, checkPtraceScope, checkTiocsti, type Finding } from '../../home/host-checks.js';
import { contextFor } from '../context.js';
import { renderTable } from '../table.js';

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

export async function runDoctor(paths: { home: string; vault: string; catalog: string }): Promise<Finding[]> {
  const home = await checkPrivateDir(paths.home);
  const findings: Finding[] = [pathFinding('home', home, false)];
  if (home.ok || home.problem !== 'does not exist') {
    findings.push(pathFinding('vault', await checkPrivateFile(paths.vault), false));
    findings.push(pathFinding('catalog', await checkPrivateFile(paths.catalog), true));
  }
  findings.push(checkTiocsti(await readOptional('/proc/sys/dev/tty/legacy_tiocsti')));
  findings.push(checkPtraceScope(await readOptional('/proc/sys/kernel/yama/ptrace_scope')));
  findings.push(checkCoreDumps(await readOptional('/proc/self/limits')));
  return findings;
}

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check permissions and host settings that protect the vault')
    .option('--json', 'print JSON')
    .option('--strict', 'exit 1 when any check is not ok')
    .action(async (o: { json?: boolean; strict?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const findings = await runDoctor(ctx.paths);
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
