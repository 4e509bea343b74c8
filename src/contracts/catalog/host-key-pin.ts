/**
 * The one edit `postern ssh trust` makes to a catalog: `targets.NAME.ssh.host_key`
 * set to a fingerprint, comments and layout kept. Pure text → text, so the
 * acceptance can check that a candidate is exactly the accepted catalog plus
 * this pin and nothing else.
 */
import { isMap, parseDocument } from 'yaml';
import { PosternError } from '../../rules/errors.js';

export function withHostKeyPin(text: string, target: string, fingerprint: string): string {
  const doc = parseDocument(text);
  const ssh = doc.getIn(['targets', target, 'ssh']);
  if (!isMap(ssh)) throw new PosternError('CATALOG_INVALID', `targets.${target}.ssh is not a map`);
  ssh.set('host_key', fingerprint);
  return doc.toString();
}
