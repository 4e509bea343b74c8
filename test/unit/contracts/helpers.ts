// Builders for catalogs in tests: tools are written as plain objects and turned
// into catalog.yaml text, so every test goes through the real parser.
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import {
  parseCatalog, prepareCall, resolveAction, resolveContract,
  type Catalog, type Change, type ResolvedAction, type Tool,
} from '../../../src/contracts/index.ts';

export const KEY = 'SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU';

export const TARGETS = {
  api: { http: { origin: 'https://api.example.com', credential: 'api-token', auth: 'bearer', idempotency_header: true } },
  api2: { http: { origin: 'https://api2.example.com', credential: 'api-token', auth: 'bearer' } },
  tracker: { http: { origin: 'https://tracker.example', credential: 'tracker-key', auth: { header: 'X-Api-Key' } } },
  preview: { ssh: { host: 'preview.internal', port: 22, user: 'deploy', host_key: KEY, credential: 'deploy-key' } },
  qapi: { http: { origin: 'https://q.example.com', credential: 'q-key', auth: { query: 'api_key' } } },
  prod: { ssh: { host: 'prod.internal', port: 22, user: 'deploy', host_key: KEY, credential: 'deploy-key' } },
} as const;

export type Obj = Record<string, unknown>;

export function catalogText(tools: Obj, targets: Obj = TARGETS): string {
  return stringify({ targets, tools });
}

export function catalog(tools: Obj, targets: Obj = TARGETS): Catalog {
  return parseCatalog(catalogText(tools, targets), 'catalog.yaml');
}

/** A tool entry with sensible defaults. */
export function tool(revisions: Obj[], extra: Obj = {}): Obj {
  return { description: 'A test tool.', effect: 'write', approval: 'session', revisions, ...extra };
}

export function objectSchema(properties: Obj, required: string[] = []): Obj {
  return { type: 'object', properties, required };
}

export const str = (extra: Obj = {}): Obj => ({ type: 'string', maxLength: 200, ...extra });

export function toolOf(c: Catalog, name: string): Tool {
  const t = c.tools.get(name);
  assert.ok(t, `tool ${name} exists`);
  return t;
}

/** Runs the call pipeline's pure part: contract decision → arguments → concrete action. */
export function call(c: Catalog, name: string, seen: number | undefined, raw: unknown) {
  const decision = resolveContract(toolOf(c, name), seen);
  const prepared = prepareCall(decision, raw);
  if (prepared.kind !== 'ready') return { decision, prepared, action: undefined as ResolvedAction | undefined };
  const resolved = resolveAction(prepared.revision, prepared.normalized);
  return { decision, prepared, action: resolved.kind === 'resolved' ? resolved.action : undefined, resolved };
}

export const classes = (changes: readonly Change[]): string[] => [...new Set(changes.map((c) => c.class))].sort();
export const codes = (changes: readonly Change[]): string[] => changes.flatMap((c) => c.reasons.map((r) => r.code));
