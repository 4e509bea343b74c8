// Seed 001 ("el contrato debe viajar con la ejecución"): its change/risk table,
// its pin/adapt/migrate/reject matrix and its pre-deploy test matrix, row by
// row, using the seed's own create_ticket v1 → v2 example where it fits.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  adaptArguments, advertiseTool, canonicalDigest, classifyRevisionChange, releaseGate, resolveAction, splitIdempotencyKey,
} from '../../../src/contracts/index.ts';
import { call, catalog, classes, codes, objectSchema, str, tool, toolOf, type Obj } from './helpers.ts';

const ticketV1 = (extra: Obj = {}): Obj => ({
  revision: 1,
  input: objectSchema({ title: str(), details: str() }, ['title', 'details']),
  http: { target: 'tracker', method: 'POST', path: '/tickets', body: { subject: '{title}', body: '{details}' } },
  output: { type: 'object', properties: { id: str() }, required: ['id'] },
  ...extra,
});
const ticketV2 = (extra: Obj = {}): Obj => ({
  revision: 2,
  input: objectSchema({ subject: str(), body: str(), priority: { enum: ['low', 'normal', 'high'] } }, ['subject', 'body', 'priority']),
  http: { target: 'tracker', method: 'POST', path: '/tickets', body: { subject: '{subject}', body: '{body}', priority: '{priority}' } },
  output: { type: 'object', properties: { id: str() }, required: ['id'] },
  ...extra,
});
const adaptV1: Obj = { policy: 'adapt', renames: { title: 'subject', details: 'body' }, defaults: { priority: 'normal' } };

function link(r1: Obj, r2: Obj, name = 'create_ticket') {
  const c = catalog({ [name]: tool([r1, r2]) });
  const t = toolOf(c, name);
  return { c, t, changes: classifyRevisionChange(t, t.revisions[0]!, t, t.revisions[1]!), gate: releaseGate(undefined, c) };
}

describe('seed 001 change/risk table', () => {
  it('row "Agregar un campo opcional" → low risk: additive', () => {
    const r2 = ticketV1({ revision: 2, input: objectSchema({ title: str(), details: str(), tag: str() }, ['title', 'details']), http: { target: 'tracker', method: 'POST', path: '/tickets', query: { tag: '{tag}' }, body: { subject: '{title}', body: '{details}' } } });
    const { changes, gate } = link(ticketV1(), r2);
    assert.deepEqual(classes(changes), ['additive']);
    assert.equal(gate.ok, true);
  });

  it('row "Cambiar title por subject" → high: field renamed; an adapter makes it a bounded migration', () => {
    const bare = link(ticketV1(), ticketV2());
    assert.ok(codes(bare.changes).includes('field_renamed'));
    assert.ok(bare.changes.some((c) => c.class === 'breaking' && c.reasons.some((r) => r.text === 'field renamed title → subject')));
    assert.equal(bare.gate.ok, false);
    const adapted = link(ticketV1(), ticketV2({ previous: adaptV1 }));
    assert.ok(classes(adapted.changes).includes('bounded_migration'));
    assert.ok(!classes(adapted.changes).includes('breaking'));
    assert.equal(adapted.gate.ok, true, adapted.gate.failures.map((f) => f.message).join('\n'));
  });

  it('row "Cambiar status de string a objeto" → high: type changed', () => {
    const r1 = { revision: 1, input: objectSchema({ status: str() }, ['status']), http: { target: 'tracker', method: 'PATCH', path: '/tickets/1', body: { status: '{status}' } } };
    const r2 = { ...r1, revision: 2, input: objectSchema({ status: objectSchema({ name: str() }, ['name']) }, ['status']) };
    const { changes, gate } = link(r1, r2, 'set_status');
    assert.ok(changes.some((c) => c.class === 'breaking' && c.reasons.some((r) => r.code === 'type_changed' && r.text === 'status: type changed string → object')));
    assert.equal(gate.ok, false);
  });

  it('row "Eliminar una opción de enum" → high for queued calls: enum value removed', () => {
    const r1 = { revision: 1, input: objectSchema({ priority: { enum: ['low', 'normal', 'urgent'] } }, ['priority']), http: { target: 'tracker', method: 'POST', path: '/p/{priority}' } };
    const r2 = { ...r1, revision: 2, input: objectSchema({ priority: { enum: ['low', 'normal'] } }, ['priority']) };
    const { changes, c } = link(r1, r2, 'set_priority');
    assert.ok(codes(changes).includes('enum_value_removed'));
    const queued = call(c, 'set_priority', 1, { priority: 'urgent' });
    assert.equal(queued.prepared.kind, 'invalid');
    assert.equal(queued.action, undefined);
  });

  it('row "Cambiar lo que hace send_email sin cambiar su schema" → very high: behavior change or declared semantic change', () => {
    const r1 = { revision: 1, input: objectSchema({ to: str(), text: str() }, ['to', 'text']), http: { target: 'api', method: 'POST', path: '/mail/send', body: { to: '{to}', text: '{text}' } } };
    const r2 = { ...r1, revision: 2, http: { target: 'api', method: 'POST', path: '/mail/send-to-all-contacts', body: { to: '{to}', text: '{text}' } } };
    const silent = link(r1, r2, 'send_email');
    assert.ok(classes(silent.changes).includes('behavior_change'));
    assert.ok(silent.gate.failures.some((f) => f.rule === 'behavior_change_without_policy'));
    const declared = link(r1, { ...r1, revision: 2, semantic_change: 'now also notifies the sales team' }, 'send_email');
    assert.deepEqual(declared.gate.failures.map((f) => f.rule), ['semantic_change_keeps_name']);
  });
});

describe('seed 001 pin/adapt/migrate/reject matrix', () => {
  it('row "Fijar": the old contract is still safe → runs with the old revision', () => {
    const c = catalog({ create_ticket: tool([ticketV1(), ticketV2({ previous: 'pin' })]) });
    const r = call(c, 'create_ticket', 1, { title: 'Printer', details: 'on fire' });
    assert.equal(r.decision.kind, 'pin');
    assert.equal(r.prepared.kind === 'ready' ? r.prepared.revision.revision : 0, 1);
    assert.equal(r.action?.kind === 'http' ? r.action.bodyText : '', '{"body":"on fire","subject":"Printer"}');
  });

  it('row "Adaptar": structure changed, meaning did not → validated as v1, converted, validated as v2', () => {
    const c = catalog({ create_ticket: tool([ticketV1(), ticketV2({ previous: adaptV1 })]) });
    const t = toolOf(c, 'create_ticket');
    const r = adaptArguments(t.revisions[0]!, t.revisions[1]!, t.revisions[1]!.previous, { title: 'Printer', details: 'on fire' });
    assert.deepEqual(r, {
      kind: 'adapted',
      args: { subject: 'Printer', body: 'on fire', priority: 'normal' },
      applied: ['renamed title → subject', 'renamed details → body', 'defaulted priority = "normal"'],
    });
    assert.equal(adaptArguments(t.revisions[0]!, t.revisions[1]!, t.revisions[1]!.previous, { title: 'Printer' }).kind, 'invalid_for_old');
  });

  it('row "Migrar": a recorded transformation, the new state validated and marked with its revision', () => {
    const r1 = { revision: 1, input: objectSchema({ state: { enum: ['open', 'wip', 'done'] } }, ['state']), http: { target: 'tracker', method: 'POST', path: '/s/{state}' } };
    const r2 = { revision: 2, input: objectSchema({ state: { enum: ['open', 'in_progress', 'closed'] } }, ['state']), http: { target: 'tracker', method: 'POST', path: '/s/{state}' }, previous: { policy: 'adapt', mappings: { state: [{ from: 'wip', to: 'in_progress' }, { from: 'done', to: 'closed' }] } } };
    const { c, changes, gate } = link(r1, r2, 'move');
    assert.ok(classes(changes).includes('bounded_migration'));
    assert.equal(gate.ok, true, gate.failures.map((f) => f.message).join('\n'));
    const r = call(c, 'move', 1, { state: 'wip' });
    assert.equal(r.prepared.kind, 'ready');
    if (r.prepared.kind !== 'ready') return;
    assert.equal(r.prepared.revision.revision, 2); // marked with its new revision
    assert.deepEqual(r.prepared.adapted, ['r1→r2: mapped state "wip" → "in_progress"']); // recorded for the journal
    assert.equal(r.action?.kind === 'http' ? r.action.path : '', '/s/in_progress');
    // An approval binds the migrated call, not the raw one: the two digests differ.
    assert.notEqual(canonicalDigest(r.prepared.normalized), canonicalDigest({ state: 'wip' }));
  });

  it('row "Rechazar": unknown revision or changed semantics → stopped before the handler', () => {
    const c = catalog({ create_ticket: tool([ticketV1(), ticketV2({ previous: 'reject' })]) });
    const unknown = call(c, 'create_ticket', 9, { title: 'a', details: 'b' });
    assert.equal(unknown.prepared.kind === 'reject' ? unknown.prepared.reason : '', 'unknown_revision');
    const stale = call(c, 'create_ticket', 1, { title: 'a', details: 'b' });
    assert.equal(stale.prepared.kind === 'reject' ? stale.prepared.reason : '', 'policy_reject');
    assert.equal(stale.action, undefined);
  });
});

describe('seed 001 pre-deploy test matrix', () => {
  const c = catalog({ create_ticket: tool([ticketV1(), ticketV2({ previous: adaptV1 })], { approval: 'per-call' }) });

  it('row "Llamada v1 válida" → adapted to the current internal format', () => {
    const r = call(c, 'create_ticket', 1, { title: 'Printer', details: 'on fire' });
    assert.equal(r.action?.kind === 'http' ? r.action.bodyText : '', '{"body":"on fire","priority":"normal","subject":"Printer"}');
  });

  it('row "Llamada v1 sin un campo obligatorio" → rejected without external effect', () => {
    const r = call(c, 'create_ticket', 1, { title: 'Printer' });
    assert.deepEqual(r.prepared.kind === 'invalid' ? [r.prepared.stage, r.prepared.issues] : [], ['planned', [{ field: 'details', problem: 'is required' }]]);
    assert.equal(r.action, undefined);
  });

  it('row "Llamada v2 válida" → run by the current handler', () => {
    const r = call(c, 'create_ticket', 2, { subject: 'a', body: 'b', priority: 'high' });
    assert.equal(r.decision.kind, 'current');
    assert.equal(r.action?.revision, 2);
  });

  it('row "Versión desconocida" → rejected before the handler', () => {
    assert.equal(call(c, 'create_ticket', 3, {}).prepared.kind, 'reject');
  });

  it('row "Respuesta v2 para un consumidor v1" → adapted by a declared output adapter, kept on the old worker, or stopped explicitly', () => {
    const out2 = { type: 'object', properties: { ticketId: str(), url: str() }, required: ['ticketId', 'url'] };
    const gateWith = (previous: Obj) => releaseGate(undefined, catalog({ create_ticket: tool([ticketV1(), ticketV2({ output: out2, previous })]) }));
    // An input adapter alone leaves v1 consumers with results they cannot read.
    assert.deepEqual(gateWith(adaptV1).failures.map((f) => f.rule), ['output_breaking_with_adapt']);
    // An output adapter that gives ticketId back as id carries every v2 result into the v1 shape.
    const adaptBoth = gateWith({ ...adaptV1, output: { renames: { ticketId: 'id' } } });
    assert.equal(adaptBoth.ok, true, adaptBoth.failures.map((f) => f.message).join('\n'));
    assert.equal(gateWith({ policy: 'pin' }).ok, true);
    assert.equal(gateWith({ policy: 'reject' }).ok, true);
  });

  it('row "Reintento después de un timeout" → an idempotency key is required and forwarded', () => {
    const t = toolOf(c, 'create_ticket');
    assert.deepEqual(advertiseTool(t).inputSchema['required'], ['subject', 'body', 'priority', 'idempotency_key']);
    const split = splitIdempotencyKey({ subject: 'a', body: 'b', priority: 'low', idempotency_key: 'retry-0001' });
    assert.equal(split.kind, 'split');
    if (split.kind !== 'split') return;
    const r = call(c, 'create_ticket', 2, split.args);
    assert.equal(r.prepared.kind, 'ready');
    if (r.prepared.kind !== 'ready') return;
    const withKey = resolveAction(r.prepared.revision, r.prepared.normalized, { idempotencyKey: split.key });
    // The tracker target does not declare idempotency_header, so no header is sent; the api target does (see resolve tests).
    assert.equal(withKey.kind === 'resolved' && withKey.action.kind === 'http' ? withKey.action.headers.some(([n]) => n === 'idempotency-key') : true, false);
  });
});
