/**
 * What an agent is shown for a tool: its current revision's normalized input
 * schema (plus `idempotency_key`, required for every tool whose effect is not
 * `read`), the output schema when declared, and MCP annotations derived from
 * the effect class. Retired tools are not listed. The key is split off before
 * validation, since revision schemas are strict and do not declare it.
 */
import type { Catalog, JsonObject, JsonValue, Revision, Tool } from '../types.js';

export const IDEMPOTENCY_KEY = 'idempotency_key';
const KEY_PATTERN = '^[A-Za-z0-9._:-]{8,128}$';

export interface AdvertisedTool {
  readonly name: string;
  readonly description: string;
  readonly revision: number;
  readonly inputSchema: JsonObject;
  readonly outputSchema: JsonObject | undefined;
  readonly annotations: { readonly readOnlyHint: boolean; readonly destructiveHint: boolean; readonly idempotentHint: boolean; readonly openWorldHint: boolean };
}

export function needsIdempotencyKey(tool: Tool): boolean {
  return tool.effect !== 'read';
}

/** What is shown for `revision` of `tool` (the current one unless a canary says otherwise, see canary.ts). */
export function advertiseTool(tool: Tool, revision: Revision = tool.current): AdvertisedTool {
  const input = revision.input.json;
  let inputSchema = input;
  if (needsIdempotencyKey(tool)) {
    const props = (input['properties'] ?? {}) as JsonObject;
    const required = (input['required'] ?? []) as readonly JsonValue[];
    inputSchema = {
      ...input,
      properties: {
        ...props,
        [IDEMPOTENCY_KEY]: { type: 'string', pattern: KEY_PATTERN, description: 'A fresh unique key per intended action; repeat it only to retry the same action.' },
      },
      required: [...required, IDEMPOTENCY_KEY],
    };
  }
  return {
    name: tool.name,
    description: tool.description,
    revision: revision.revision,
    inputSchema,
    outputSchema: revision.output?.json,
    annotations: {
      readOnlyHint: tool.effect === 'read',
      destructiveHint: tool.effect === 'destructive',
      idempotentHint: tool.effect === 'read',
      openWorldHint: true,
    },
  };
}

/** The tools to list, sorted by name; retired tools are left out. */
export function advertiseCatalog(catalog: Catalog): AdvertisedTool[] {
  return [...catalog.tools.values()]
    .filter((t) => t.current.retired === undefined)
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((t) => advertiseTool(t));
}

export type KeySplit =
  | { readonly kind: 'split'; readonly key: string | undefined; readonly args: unknown }
  | { readonly kind: 'invalid_key'; readonly problem: string };

/** Separates `idempotency_key` from the raw arguments (which are otherwise passed on untouched). */
export function splitIdempotencyKey(raw: unknown): KeySplit {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !Object.hasOwn(raw, IDEMPOTENCY_KEY)) return { kind: 'split', key: undefined, args: raw };
  const { [IDEMPOTENCY_KEY]: key, ...rest } = raw as Record<string, unknown>;
  if (typeof key !== 'string' || !new RegExp(KEY_PATTERN).test(key)) return { kind: 'invalid_key', problem: `${IDEMPOTENCY_KEY} must match ${KEY_PATTERN}` };
  return { kind: 'split', key, args: rest };
}
