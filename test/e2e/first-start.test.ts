/**
 * The first start of a brand-new home reads as a first start: no alarm about
 * a removed acceptance record (nothing was ever accepted), no vault line
 * worded as a secret change, and a plain notice that no catalog is accepted
 * yet. `doctor` names a catalog never accepted and a catalog.yaml that
 * differs from the accepted one, each with the command that fixes it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { install, type Installation } from '../helpers/daemon.js';
import { waitFor } from '../helpers/wait.js';

interface Finding { readonly check: string; readonly status: string; readonly detail: string; readonly fix?: string }

describe('first start of a new home', () => {
  let inst: Installation;
  before(async () => {
    inst = await install({ secrets: [] });
  });
  after(() => inst.cleanup());

  const catalogFinding = async (): Promise<Finding> => {
    const d = await inst.sb.run(['doctor', '--json']);
    assert.equal(d.code, 0, d.stderr);
    const f = (JSON.parse(d.stdout) as Finding[]).find((x) => x.check === 'catalog acceptance');
    assert.ok(f !== undefined, d.stdout);
    return f;
  };

  it('doctor: a catalog never accepted is a warning that names `postern catalog accept`', async () => {
    const f = await catalogFinding();
    assert.equal(f.status, 'warning');
    assert.match(f.detail, /no catalog was ever accepted/);
    assert.match(f.fix ?? '', /postern catalog new.*postern catalog accept/);
  });

  it('the daemon says no catalog is accepted yet, raises no alarm, and words its own vault write as no credential change', { timeout: 120_000 }, async () => {
    await inst.startDaemon();
    assert.match(inst.daemonLog, /no catalog accepted yet: .*postern catalog accept/);
    // Catalog judgements run one after another: once this acceptance is adopted, every judgement
    // queued before it (the one the first vault write starts) has run.
    await inst.acceptCatalog({ version: 1, tools: {} });
    await waitFor(() => inst.daemonLog.includes('adopted catalog'), () => inst.daemonLog);
    assert.doesNotMatch(inst.daemonLog, /ALARM/);
    assert.doesNotMatch(inst.daemonLog, /vault generation \d+ adopted \(was \d+\): added -; rotated -; removed -/);
    assert.equal(await inst.stopDaemon(), 0);
    assert.doesNotMatch(inst.daemonLog, /ALARM/);
  });

  it('doctor: the accepted catalog is ok; an edited catalog.yaml is a warning naming `postern catalog accept`', async () => {
    let f = await catalogFinding();
    assert.equal(f.status, 'ok', f.detail);
    assert.match(f.detail, /catalog\.yaml is the accepted catalog #1/);
    await appendFile(join(inst.sb.home, 'catalog.yaml'), '# edited\n');
    f = await catalogFinding();
    assert.equal(f.status, 'warning');
    assert.match(f.detail, /catalog\.yaml differs from the accepted catalog #1/);
    assert.match(f.fix ?? '', /postern catalog accept/);
  });
});
