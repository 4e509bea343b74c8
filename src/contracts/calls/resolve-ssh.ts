/**
 * Fills an SSH argv template. Each `{param}` element is exactly one argument,
 * each `{...param}` element splices an array parameter as several arguments,
 * and text elements interpolate scalars into one argument. NUL is refused (it
 * cannot travel in an argv). An argument whose first character comes from the
 * agent may not start with "-" — so a value cannot become an option — unless a
 * literal "--" element precedes it in the template or the parameter's schema
 * says `x-postern-allow-dash: true` (enum values are always allowed: the
 * operator wrote them). argv[0] is fixed or one of a closed list.
 */
import { findProperty, dashPolicyOf, type ObjectNode, type SchemaNode } from '../schema/schema-node.js';
import { RefusedValue, scalarText, shellQuote, type ResolvedSsh } from './resolved.js';
import type { JsonObject, JsonValue, SshAction } from '../types.js';

function nodeOf(input: ObjectNode, param: string): SchemaNode | undefined {
  return findProperty(input, param)?.node;
}

function check(arg: string, field: string, agentLeads: boolean, dashOk: boolean, index: number): string {
  if (arg.includes('\u0000')) throw new RefusedValue(field, 'NUL cannot be passed in an argument');
  if (index === 0) return arg;
  if (agentLeads && arg.startsWith('-') && !dashOk) {
    throw new RefusedValue(field, 'an argument may not start with "-" here (the template has no "--" before it and the schema does not allow it)');
  }
  return arg;
}

export function resolveSsh(tool: string, revision: number, action: SshAction, input: ObjectNode, args: JsonObject): ResolvedSsh {
  const argv: string[] = [];
  let afterDoubleDash = false;
  for (const el of action.argv) {
    switch (el.kind) {
      case 'literal':
        argv.push(check(el.value, 'argv', false, true, argv.length));
        if (el.value === '--') afterDoubleDash = true;
        break;
      case 'param': {
        const node = nodeOf(input, el.param);
        const dashOk = afterDoubleDash || (node !== undefined && dashPolicyOf(node) === 'allowed');
        const text = scalarText(args[el.param], el.param);
        if (argv.length === 0 && !action.programs.includes(text)) throw new RefusedValue(el.param, `program must be one of ${action.programs.join(', ')}`);
        argv.push(check(text, el.param, true, dashOk, argv.length));
        break;
      }
      case 'splice': {
        const node = nodeOf(input, el.param);
        const dashOk = afterDoubleDash || (node !== undefined && dashPolicyOf(node) === 'allowed');
        const list: JsonValue | undefined = args[el.param];
        if (list === undefined) break;
        if (!Array.isArray(list)) throw new RefusedValue(el.param, 'must be an array');
        (list as readonly JsonValue[]).forEach((v, i) => {
          argv.push(check(scalarText(v, `${el.param}[${i}]`), `${el.param}[${i}]`, true, dashOk, argv.length));
        });
        break;
      }
      case 'text': {
        const first = el.template.parts[0];
        let text = '';
        for (const p of el.template.parts) text += p.kind === 'literal' ? p.text : scalarText(args[p.param], p.param);
        const leader = first !== undefined && first.kind !== 'literal' ? first.param : undefined;
        const field = el.template.parts.find((p) => p.kind !== 'literal');
        const node = leader === undefined ? undefined : nodeOf(input, leader);
        const dashOk = afterDoubleDash || (node !== undefined && dashPolicyOf(node) === 'allowed');
        argv.push(check(text, field !== undefined ? field.param : 'argv', leader !== undefined, dashOk, argv.length));
        break;
      }
    }
  }
  const t = action.target;
  return {
    kind: 'ssh',
    tool,
    revision,
    target: t.name,
    credential: t.credential,
    host: t.host,
    port: t.port,
    user: t.user,
    hostKey: t.hostKey,
    argv,
    command: argv.map(shellQuote).join(' '),
  };
}
