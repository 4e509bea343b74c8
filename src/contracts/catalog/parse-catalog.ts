/**
 * `parseCatalog`: catalog text → a fully checked `Catalog`, or one
 * CATALOG_INVALID error listing every problem with file, document path, line
 * and reason. Pure: the caller reads the file and passes its text (and, when
 * the vault is open, the set of credential names, so unknown ones are caught).
 */
import { buildTargets } from './build-targets.js';
import { buildTools } from './build-tools.js';
import { buildPreapprovals } from './build-preapprovals.js';
import { CatalogShape } from './catalog-shape.js';
import { catalogInvalid, IssueSink } from '../issues.js';
import { readYaml } from './parse-yaml.js';
import { checkShape } from './shape-check.js';
import type { Catalog } from '../types.js';

export function parseCatalog(text: string, fileName: string, knownCredentials?: ReadonlySet<string>): Catalog {
  const { value, locate } = readYaml(text, fileName);
  const sink = new IssueSink();
  if (value === null || value === undefined) {
    sink.add([], 'the catalog is empty (it needs at least tools:)');
    throw catalogInvalid(fileName, sink.issues, locate);
  }
  const doc = checkShape(CatalogShape, value, [], sink);
  if (doc === undefined) throw catalogInvalid(fileName, sink.issues, locate);
  const targets = buildTargets(doc.targets ?? {}, sink, knownCredentials);
  const tools = buildTools(doc.tools, sink, targets);
  const preapprovals = buildPreapprovals(doc.preapprovals, sink, { tools, targets, declaredTools: new Set(Object.keys(doc.tools)), declaredTargets: new Set(Object.keys(doc.targets ?? {})) });
  if (sink.count > 0) throw catalogInvalid(fileName, sink.issues, locate);
  return { fileName, targets, tools, preapprovals };
}
