/**
 * String templates: literal text with `{param}` placeholders (`{...param}` for
 * spliced arrays where a context allows it) and `{{` / `}}` for literal braces.
 * Parsing is total and strict — an unmatched brace or a bad name is an error,
 * never literal text — so the operator cannot write a template that means
 * something other than what it looks like.
 */

export type TemplatePart =
  | { readonly kind: 'literal'; readonly text: string }
  | { readonly kind: 'param'; readonly param: string }
  | { readonly kind: 'splice'; readonly param: string };

export interface StringTemplate {
  readonly source: string;
  readonly parts: readonly TemplatePart[];
}

type TemplateParse = { readonly ok: true; readonly template: StringTemplate } | { readonly ok: false; readonly problem: string };

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export function parseStringTemplate(source: string): TemplateParse {
  const parts: TemplatePart[] = [];
  let text = '';
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const next = source[i + 1];
    if (c === '{' && next === '{') {
      text += '{';
      i += 2;
    } else if (c === '}' && next === '}') {
      text += '}';
      i += 2;
    } else if (c === '}') {
      return { ok: false, problem: `unmatched "}" at character ${i + 1} (write "}}" for a literal brace)` };
    } else if (c === '{') {
      const end = source.indexOf('}', i);
      if (end < 0) return { ok: false, problem: `unclosed "{" at character ${i + 1} (write "{{" for a literal brace)` };
      const inner = source.slice(i + 1, end);
      const splice = inner.startsWith('...');
      const name = splice ? inner.slice(3) : inner;
      if (!PARAM_NAME.test(name)) return { ok: false, problem: `"{${inner}}" is not a parameter placeholder (names are letters, digits and _)` };
      if (text !== '') parts.push({ kind: 'literal', text });
      text = '';
      parts.push(splice ? { kind: 'splice', param: name } : { kind: 'param', param: name });
      i = end + 1;
    } else {
      text += c;
      i += 1;
    }
  }
  if (text !== '') parts.push({ kind: 'literal', text });
  return { ok: true, template: { source, parts } };
}

/** The parameters a template refers to, in order of first use. */
export function paramsOf(t: StringTemplate): string[] {
  const out: string[] = [];
  for (const p of t.parts) if (p.kind !== 'literal' && !out.includes(p.param)) out.push(p.param);
  return out;
}

/** The whole template is exactly one placeholder (`{p}` or `{...p}`). */
export function soleParam(t: StringTemplate): Extract<TemplatePart, { kind: 'param' | 'splice' }> | undefined {
  const only = t.parts.length === 1 ? t.parts[0] : undefined;
  return only !== undefined && only.kind !== 'literal' ? only : undefined;
}

/** The literal text of a template without placeholders; undefined when it has any. */
export function literalOf(t: StringTemplate): string | undefined {
  if (t.parts.some((p) => p.kind !== 'literal')) return undefined;
  return t.parts.map((p) => (p.kind === 'literal' ? p.text : '')).join('');
}

/** A placeholder-name-free shape used to compare templates: `--branch={}`, literal braces doubled. */
export function shapeOf(t: StringTemplate): string {
  return t.parts
    .map((p) => (p.kind === 'literal' ? p.text.replaceAll('{', '{{').replaceAll('}', '}}') : p.kind === 'splice' ? '{...}' : '{}'))
    .join('');
}
