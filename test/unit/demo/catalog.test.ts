/**
 * The demo catalog is a valid catalog whose second acceptance tells the
 * story it is meant to: it passes the release gate, `deploy_preview` r1→r2 is
 * a bounded migration covered by `adapt` that also widens authority, and
 * `create_ticket` r1→r2 is breaking and covered by `reject`. A change to the
 * catalog rules that broke the demo fails here, without running it.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { parseCatalog, releaseGate, resolveContract } from '../../../src/contracts/index.js';
import { DEMO_CREDENTIALS, demoCatalogText } from '../../../src/demo/catalog.js';

const targets = { httpOrigin: 'http://127.0.0.1:8080', sshPort: 2222, sshUser: 'deploy', hostKey: 'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU' };
const creds = new Set<string>(Object.values(DEMO_CREDENTIALS));
const first = parseCatalog(demoCatalogText(targets, 1), 'demo-1.yaml', creds);
const second = parseCatalog(demoCatalogText(targets, 2), 'demo-2.yaml', creds);

it('acceptance #1 is three tools at revision 1 and passes the gate as a first catalog', () => {
  assert.deepEqual([...first.tools.keys()].sort(), ['create_ticket', 'deploy_preview', 'list_tickets']);
  for (const tool of first.tools.values()) assert.equal(tool.current.revision, 1);
  assert.equal(releaseGate(undefined, first).ok, true);
});

it('acceptance #2 passes the gate: adapt for deploy_preview (also widening), reject for create_ticket', () => {
  const report = releaseGate(first, second);
  assert.equal(report.ok, true, JSON.stringify(report.failures));
  const classes = (tool: string): string[] => report.changes.filter((c) => c.tool === tool && c.from === 1 && c.to === 2).map((c) => c.class);
  assert.ok(classes('deploy_preview').includes('bounded_migration'));
  assert.ok(classes('deploy_preview').includes('authority_widening'));
  assert.ok(classes('create_ticket').includes('breaking'));
  assert.equal(resolveContract(second.tools.get('deploy_preview')!, 1).kind, 'bridge');
  assert.equal(resolveContract(second.tools.get('create_ticket')!, 1).kind, 'reject');
});
