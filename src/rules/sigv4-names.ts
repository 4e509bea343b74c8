/**
 * The one rule for what AWS Signature Version 4 owns in a request to a
 * target signed with it: the headers the signature writes (`authorization`,
 * `x-amz-date`, `x-amz-security-token`, `x-amz-content-sha256`) and the query
 * parameters that carry a signature in a URL — every `X-Amz-*` name (a
 * presigned URL's `X-Amz-Algorithm`, `X-Amz-Credential`, `X-Amz-Date`,
 * `X-Amz-Expires`, `X-Amz-SignedHeaders`, `X-Amz-Signature`,
 * `X-Amz-Security-Token`, and any added later) and the query authentication
 * of Signature Version 2 (`AWSAccessKeyId`, `Signature`, `SignatureMethod`,
 * `SignatureVersion`), which S3 and the Query APIs still read. A request that
 * carried them beside Postern's own signature would be authenticated (or
 * refused) by credentials and a signature that are not the target's.
 *
 * Query names are compared the way src/rules/query-names.ts reads them: after
 * percent-decoding, case-insensitively, with `-`, `.`, space and `+` read as
 * `_` and array suffixes dropped (fail closed: wider than AWS itself).
 *
 * Invariants: pure; used by the catalog, the resolver of agent queries and
 * the HTTP executor alike.
 */
import { queryNameForms, queryNameKey } from './query-names.js';

/** Headers a SigV4 signature owns: a target signed with it may not set them otherwise. */
export const SIGV4_OWNED_HEADERS: readonly string[] = ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'];

/** The prefix of every query parameter of a presigned URL, as a comparison key. */
const PRESIGNED_PREFIX = queryNameKey('X-Amz-');
/** Signature Version 2 query authentication. */
const QUERY_AUTH_PARAMS: readonly string[] = ['AWSAccessKeyId', 'Signature', 'SignatureMethod', 'SignatureVersion'];

/**
 * The signature's query parameter that `name` may be read as (`X-Amz-*` for
 * the presigned-URL family, else the SigV2 name), or undefined.
 */
export function sigv4QueryParam(name: string): string | undefined {
  const forms = queryNameForms(name);
  for (const f of forms) if (f.startsWith(PRESIGNED_PREFIX)) return 'X-Amz-*';
  return QUERY_AUTH_PARAMS.find((p) => forms.has(queryNameKey(p)));
}
