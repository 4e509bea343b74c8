/**
 * Catalog problems, collected rather than thrown one at a time, so an operator
 * sees every mistake in one run. Each issue carries its path in the document
 * (`tools.deploy_preview.revisions[1].http.path`), and the final error names
 * the file, the path, the line when known, and what is wrong. The thrown value
 * is always a CATALOG_INVALID PosternError.
 */
import { PosternError } from '../rules/errors.js';
import { escapeForTerminal as printable } from '../rules/terminal-text.js';

export type DocPath = readonly (string | number)[];

interface CatalogIssue {
  readonly path: DocPath;
  readonly message: string;
  /** Known directly for YAML syntax errors; otherwise found through the locator. */
  readonly line?: number | undefined;
}

/** How many issues the one-line message shows; the rest are in `details.issues`. */
const SHOWN_IN_MESSAGE = 3;

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/** `tools.deploy_preview.revisions[1].http.path`; keys that are not plain identifiers are quoted. */
function formatPath(path: DocPath): string {
  if (path.length === 0) return '(document)';
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else if (PLAIN_KEY.test(seg)) out += out === '' ? seg : `.${seg}`;
    else out += `[${JSON.stringify(seg)}]`;
  }
  return out;
}

/** Accumulates issues under a moving path prefix. */
export class IssueSink {
  readonly issues: CatalogIssue[] = [];

  add(path: DocPath, message: string, line?: number): void {
    this.issues.push({ path, message, line });
  }

  get count(): number {
    return this.issues.length;
  }
}

export type Locator = (path: DocPath) => number | undefined;

/** One line per issue: `catalog.yaml: tools.x.effect: must be one of … (line 7)`. */
function describeIssue(fileName: string, issue: CatalogIssue, locate: Locator): string {
  const line = issue.line ?? locate(issue.path);
  const where = line === undefined ? '' : ` (line ${line})`;
  return printable(`${fileName}: ${formatPath(issue.path)}: ${issue.message}${where}`);
}

export function catalogInvalid(fileName: string, issues: readonly CatalogIssue[], locate: Locator): PosternError {
  const lines = issues.map((i) => describeIssue(fileName, i, locate));
  const shown = lines.slice(0, SHOWN_IN_MESSAGE).join('; ');
  const more = lines.length > SHOWN_IN_MESSAGE ? ` (and ${lines.length - SHOWN_IN_MESSAGE} more)` : '';
  return new PosternError('CATALOG_INVALID', `${shown}${more}`, {
    details: { file: fileName, issues: lines, issue_count: lines.length },
  });
}
