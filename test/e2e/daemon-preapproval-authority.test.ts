/**
 * A pre-approval rule is bound to the authority it was accepted for, end to
 * end: the real daemon with `--unattended`, the official MCP client over real
 * stdio, a loopback API with an append-only request log, and the CLI's
 * `catalog check` / `catalog accept`. A rule accepted for revision 1 (POST)
 * pre-approves it; accepting revision 2 (DELETE, a widening) does not widen
 * the rule: both commands name the rule, and calls of revision 2 end
 * APPROVAL_UNAVAILABLE with nothing sent — until the operator accepts the
 * rule for revision 2 (`revision: 2`), which both commands report as a
 * widening of the rule; only then does a DELETE run unattended.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { FakeHttpServer } from '../helpers/fake-http.js';
import type { Installation } from '../helpers/daemon.js';
import { canary, httpFixture } from '../helpers/fixture.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = canary('tok');
type Result = { isError?: boolean; structuredContent?: Record<string, unknown> };

function catalogFor(origin: string, o: { widened: boolean; ruleRevision?: number }) {
  const r1 = { revision: 1, input: { type: 'object', properties: { id: { type: 'string', pattern: '^[a-z0-9]{1,20}$' } }, required: ['id'], additionalProperties: false }, http: { target: 'api', method: 'POST', path: '/notes/{id}' } };
  const r2 = { ...r1, revision: 2, http: { ...r1.http, method: 'DELETE' }, previous: { policy: 'reject' } };
  return {
    targets: { api: { http: { origin, credential: 'api-token', auth: 'bearer', allow_private: true } } },
    tools: { edit_note: { description: 'Edit a note.', effect: 'destructive', approval: 'per-call', revisions: o.widened ? [r1, r2] : [r1] } },
    preapprovals: { edits: { tool: 'edit_note', budget: 10, ...(o.ruleRevision === undefined ? {} : { revision: o.ruleRevision }) } },
  };
}

describe('daemon --unattended: a rule stays bound to the authority it was accepted for', () => {
  let inst: Installation;
  let http: FakeHttpServer;
  const g = (): string[] => ['--passphrase-file', inst.passFile];
  const methods = (): string[] => http.requests.filter((r) => r.url.startsWith('/notes/')).map((r) => r.method);

  /** A fresh session (it lists the current revision), one call. */
  const callEdit = async (): Promise<Result> => {
    const agent = await inst.client();
    await agent.listTools();
    return (await agent.callTool({ name: 'edit_note', arguments: { id: 'n1', idempotency_key: `k-${randomBytes(6).toString('hex')}` } })) as Result;
  };

  /** Writes catalog.yaml; returns what check and accept --yes said; waits until the daemon adopted it. */
  const change = async (catalog: unknown): Promise<{ check: string; accept: string }> => {
    await writeFile(join(inst.sb.home, 'catalog.yaml'), stringify(catalog));
    const check = await inst.sb.run(['catalog', 'check']);
    const adopted = (inst.daemonLog.match(/adopted catalog/g) ?? []).length;
    const accept = await inst.sb.run(['catalog', 'accept', '--yes', ...g()]);
    assert.equal(accept.code, 0, accept.stdout + accept.stderr);
    await waitFor(() => (inst.daemonLog.match(/adopted catalog/g) ?? []).length > adopted, () => `the daemon adopts the accepted catalog: ${inst.daemonLog}`);
    return { check: check.stdout + check.stderr, accept: accept.stdout + accept.stderr };
  };

  before(async () => {
    ({ http, inst } = await httpFixture({
      token: TOKEN,
      routes: {
        '/notes/n1': (_req, res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"ok":true}');
        },
      },
      catalog: (_targets, target) => catalogFor(target.origin, { widened: false }),
      start: ['--unattended'],
    }));
  });

  after(async () => {
    try {
      inst.sb.assertNeverPrinted(TOKEN, 'the API token');
    } finally {
      await inst.cleanup();
      await http.close();
    }
  });

  it('the rule pre-approves the revision it was accepted for', async () => {
    const r = await callEdit();
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(methods(), ['POST']);
  });

  it('accepting a widening revision names the rule in check and accept, and does not widen it: the DELETE is refused, nothing sent', async () => {
    const said = await change(catalogFor(http.origin, { widened: true }));
    const named = /pre-approval rule edits was accepted for edit_note r1; r2 reaches beyond it \(new method DELETE\): unattended runs do not pre-approve its calls until the rule is accepted for it \(revision: 2 in the rule\)/;
    assert.match(said.check, named);
    assert.match(said.accept, named);
    const r = await callEdit();
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r.structuredContent?.['error_code'], 'APPROVAL_UNAVAILABLE');
    assert.equal(r.structuredContent?.['side_effect_started'], false);
    assert.match(String(r.structuredContent?.['message']), /reaches beyond the authority every covering pre-approval rule was accepted for/);
    assert.deepEqual(methods(), ['POST'], 'no DELETE reached the API');
  });

  it('once the operator accepts the rule for revision 2 (a widening both commands report), the DELETE runs unattended', async () => {
    const said = await change(catalogFor(http.origin, { widened: true, ruleRevision: 2 }));
    const widened = /pre-approval rule edits covers more: accepted for edit_note r2 instead of r1: new method DELETE/;
    assert.match(said.check, widened);
    assert.match(said.accept, widened);
    assert.doesNotMatch(said.accept, /reaches beyond it/);
    const r = await callEdit();
    assert.equal(r.isError, undefined, JSON.stringify(r));
    assert.deepEqual(methods(), ['POST', 'DELETE']);
  });
});
