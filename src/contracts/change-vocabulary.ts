/**
 * The vocabulary of contract change: classes, reason codes and the words for
 * them. Schema differences arrive as neutral codes (schema-within.ts) and are
 * worded here for their direction — an input that old calls may fail, an input
 * that now accepts more, a result old readers may not understand, a result that
 * now says more — so every report uses the same phrases.
 */
import type { DiffCode, SchemaDiff } from './schema/schema-within.js';
import type { PolicyName } from './types.js';

export const ChangeClasses = {
  additive: 'old calls stay valid and keep their meaning; new clients can do more',
  bounded_migration: 'old calls no longer validate as sent, but a declared adapter carries every one of them over',
  breaking: 'old calls, or old readers of the result, would fail',
  behavior_change: 'old calls still validate but would run a different request or command',
  authority_widening: 'the revision reaches something the previous one could not',
  removal: 'a tool or revision stops being callable',
  semantic_change: 'the operator declared that the meaning changed',
  metadata: 'descriptions, dates, approval mode and other facts outside the contract',
} as const;
export type ChangeClass = keyof typeof ChangeClasses;

/** What part of the contract a change is about. */
export type ChangeAspect = 'input' | 'output' | 'action' | 'authority' | 'tool' | 'catalog';

export interface ChangeReason {
  readonly code: string;
  readonly text: string;
}

export interface Change {
  readonly tool: string;
  /** The revision link `from → to`; both absent for tool- and catalog-level changes. */
  readonly from: number | undefined;
  readonly to: number | undefined;
  readonly class: ChangeClass;
  readonly aspect: ChangeAspect;
  /** The `previous` policy of `to`, for revision links. */
  readonly policy: PolicyName | 'none' | undefined;
  readonly reasons: readonly ChangeReason[];
}

const at = (d: SchemaDiff): string => (d.path === '' ? '' : `${d.path}: `);

type Words = (d: SchemaDiff, p: string) => ChangeReason;
type MaybeWords = (d: SchemaDiff, p: string) => ChangeReason | undefined;
const r = (code: string, text: string): ChangeReason => ({ code, text });

/** Old input (inner) vs new input (outer): why an old call may fail. One entry per diff code. */
const INPUT_BREAK: Record<DiffCode, Words> = {
  type: (d, p) => r('type_changed', `${p}type changed ${d.inner} → ${d.outer}`),
  required: (_, p) => r('optional_to_required', `${p}optional → required`),
  required_unknown: (_, p) => r('new_required_field', `${p}new required field`),
  undeclared: (_, p) => r('field_undeclared', `${p}no longer declared`),
  extra_field: (_, p) => r('field_removed', `${p}field removed (old calls that send it fail)`),
  renamed: (d) => r('field_renamed', `field renamed ${d.inner} → ${d.outer}`),
  enum_value: (d, p) => r('enum_value_removed', `${p}enum value ${d.inner} removed`),
  enum_restricted: (d, p) => r('enum_restricted', `${p}now limited to ${d.outer}`),
  pattern: (d, p) => (d.inner === 'none' ? r('pattern_added', `${p}pattern added ${d.outer}`) : r('pattern_changed', `${p}pattern changed ${d.inner} → ${d.outer} (treated as tightened)`)),
  format: (d, p) => r('format_tightened', `${p}format ${d.inner} → ${d.outer}`),
  max_length: (d, p) => r('max_length_reduced', `${p}maxLength reduced ${d.inner} → ${d.outer}`),
  min_length: (d, p) => r('min_length_raised', `${p}minLength raised ${d.inner} → ${d.outer}`),
  range: (d, p) => r('range_narrowed', `${p}range narrowed ${d.inner} → ${d.outer}`),
  multiple_of: (d, p) => r('multiple_of_changed', `${p}multipleOf ${d.inner} → ${d.outer}`),
  max_items: (d, p) => r('max_items_reduced', `${p}maxItems reduced ${d.inner} → ${d.outer}`),
  min_items: (d, p) => r('min_items_raised', `${p}minItems raised ${d.inner} → ${d.outer}`),
  unique_items: (_, p) => r('unique_items_added', `${p}items must now be unique`),
  additional: (d, p) => r('additional_properties_tightened', `${p}additionalProperties tightened: ${d.inner} → ${d.outer}`),
  max_properties: (d, p) => r('max_properties_reduced', `${p}maxProperties reduced ${d.inner} → ${d.outer}`),
  leading_dash: (_, p) => r('leading_dash_refused', `${p}values may no longer start with "-"`),
  json_limits: (d, p) => r('json_limits_reduced', `${p}JSON limits reduced ${d.inner} → ${d.outer}`),
};

/** New input (inner) vs old input (outer): what the new revision accepts that the old did not. */
const INPUT_ADD: Partial<Record<DiffCode, MaybeWords>> = {
  // already reported from the breaking side
  renamed: () => undefined,
  required_unknown: () => undefined,
  undeclared: () => undefined,
  // a required new field is already reported as breaking (new_required_field)
  extra_field: (d, p) => (d.inner === 'required' ? undefined : r('field_added', `${p}optional field added`)),
  required: (_, p) => r('required_to_optional', `${p}required → optional`),
  enum_value: (d, p) => r('enum_value_added', `${p}enum value ${d.inner} added`),
  enum_restricted: (d, p) => r('enum_relaxed', `${p}no longer limited to ${d.outer}`),
  max_length: (d, p) => r('max_length_raised', `${p}maxLength raised ${d.outer} → ${d.inner}`),
  min_length: (d, p) => r('min_length_lowered', `${p}minLength lowered ${d.outer} → ${d.inner}`),
  max_items: (d, p) => r('max_items_raised', `${p}maxItems raised ${d.outer} → ${d.inner}`),
  min_items: (d, p) => r('min_items_lowered', `${p}minItems lowered ${d.outer} → ${d.inner}`),
  range: (d, p) => r('range_widened', `${p}range widened ${d.outer} → ${d.inner}`),
  pattern: (d, p) => r('pattern_relaxed', `${p}pattern ${d.outer} → ${d.inner}`),
};

/** New output (inner) vs old output (outer): what an old reader of the result may not handle. */
const OUTPUT_BREAK: Partial<Record<DiffCode, Words>> = {
  required_unknown: (_, p) => r('output_field_removed', `${p}output field removed`),
  required: (_, p) => r('output_field_may_be_absent', `${p}output field may now be absent`),
  undeclared: (_, p) => r('output_field_undeclared', `${p}output field no longer declared`),
  renamed: (d) => r('output_field_renamed', `output field renamed ${d.outer} → ${d.inner}`),
  type: (d, p) => r('output_type_changed', `${p}output type changed ${d.outer} → ${d.inner}`),
  extra_field: (_, p) => r('output_field_added_to_closed_object', `${p}output field added where additionalProperties is false`),
};

/** Old output (inner) vs new output (outer): what the result now says in addition. */
const OUTPUT_ADD: Partial<Record<DiffCode, Words>> = {
  required_unknown: (_, p) => r('output_field_added', `${p}output field added`),
  undeclared: (_, p) => r('output_field_added', `${p}optional output field added`),
  required: (_, p) => r('output_field_always_present', `${p}output field now always present`),
  enum_value: (d, p) => r('output_enum_value_dropped', `${p}output enum value ${d.inner} no longer produced`),
};

export function inputBreakReason(d: SchemaDiff): ChangeReason {
  return INPUT_BREAK[d.code](d, at(d));
}

/** Undefined when the difference is already reported from the breaking side. */
export function inputAddReason(d: SchemaDiff): ChangeReason | undefined {
  const words = INPUT_ADD[d.code];
  if (words !== undefined) return words(d, at(d));
  return r(`relaxed_${d.code}`, `${at(d)}accepts more (${d.code}: ${d.outer} → ${d.inner})`);
}

export function outputBreakReason(d: SchemaDiff): ChangeReason {
  return OUTPUT_BREAK[d.code]?.(d, at(d)) ?? r(`output_${d.code}_relaxed`, `${at(d)}output constraint relaxed (${d.code}: ${d.outer} → ${d.inner})`);
}

/** Output diffs that are safe for old readers (seed 004: a new enum value in a result is not breaking), worded; else undefined. */
export function harmlessOutputReason(d: SchemaDiff): ChangeReason | undefined {
  return d.code === 'enum_value' ? r('output_enum_value_added', `${at(d)}output enum value ${d.inner} added`) : undefined;
}

export function outputAddReason(d: SchemaDiff): ChangeReason {
  return OUTPUT_ADD[d.code]?.(d, at(d)) ?? r(`output_${d.code}_tightened`, `${at(d)}output constraint tightened (${d.code})`);
}
