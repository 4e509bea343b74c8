/**
 * SigV4 against the published examples: the AWS Signature Version 4 test
 * suite (get-vanilla, get-vanilla-query-order-key-case), the IAM ListUsers
 * example of the signing guide and the S3 "GET Object" example of the S3
 * API reference. Each gives the inputs and the expected signature. Then what
 * the signature owns on a SigV4 target: its headers, and the query parameters
 * of a presigned URL (`X-Amz-*`) or of SigV2 query authentication, in any
 * case or percent-encoding, refused from the agent's query, the catalog and
 * the executor alike.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { amzDate, signSigV4, uriEncode } from '../../../../src/executors/http/sigv4.js';
import { prepareRequest } from '../../../../src/executors/http/prepare-request.js';
import type { HttpRequestSpec } from '../../../../src/executors/http/index.js';
import { isPosternError } from '../../../../src/rules/errors.js';
import fc from 'fast-check';
import { parseCatalog, resolveAction } from '../../../../src/contracts/index.js';
import { sigv4QueryParam } from '../../../../src/rules/sigv4-names.js';
import { catalog, catalogText, tool, toolOf } from '../../contracts/helpers.js';

const SUITE = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: Buffer.from('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY') };
const AT_2015 = new Date('2015-08-30T12:36:00Z');

describe('SigV4 (published vectors)', () => {
  it('get-vanilla', () => {
    const s = signSigV4({ method: 'GET', target: '/', host: 'example.amazonaws.com', headers: [], body: null }, SUITE, { region: 'us-east-1', service: 'service' }, AT_2015);
    assert.equal(s.signature, '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31', s.canonicalRequest);
    assert.deepEqual(s.headers.at(-1), ['authorization', 'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31']);
  });

  it('get-vanilla-query-order-key-case', () => {
    const s = signSigV4({ method: 'GET', target: '/?Param2=value2&Param1=value1', host: 'example.amazonaws.com', headers: [], body: null }, SUITE, { region: 'us-east-1', service: 'service' }, AT_2015);
    assert.equal(s.canonicalRequest.split('\n')[2], 'Param1=value1&Param2=value2');
    assert.equal(s.signature, 'b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500', s.canonicalRequest);
  });

  it('IAM ListUsers (signing guide)', () => {
    const s = signSigV4(
      { method: 'GET', target: '/?Action=ListUsers&Version=2010-05-08', host: 'iam.amazonaws.com', headers: ['Content-Type', 'application/x-www-form-urlencoded; charset=utf-8'], body: null },
      SUITE,
      { region: 'us-east-1', service: 'iam' },
      AT_2015,
    );
    assert.equal(s.signature, '5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7', s.canonicalRequest);
  });

  it('S3 GET Object (S3 API reference)', () => {
    const s = signSigV4(
      { method: 'GET', target: '/test.txt', host: 'examplebucket.s3.amazonaws.com', headers: ['Range', 'bytes=0-9'], body: null },
      { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: Buffer.from('wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY') },
      { region: 'us-east-1', service: 's3' },
      new Date('2013-05-24T00:00:00Z'),
    );
    assert.equal(s.signature, 'f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41', s.canonicalRequest);
    assert.ok(s.headers.some(([n, v]) => n === 'x-amz-content-sha256' && v === 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'));
  });
});

describe('SigV4 details', () => {
  it('a session token is sent and signed; the secret key appears nowhere in the output', () => {
    const secret = 'S3cr3t/Key+Value';
    const s = signSigV4({ method: 'POST', target: '/a%20b/c', host: 'h.example:8443', headers: ['content-type', 'application/json'], body: Buffer.from('{}') }, { accessKeyId: 'AKID', secretAccessKey: Buffer.from(secret), sessionToken: 'TOKEN' }, { region: 'eu-west-1', service: 'execute-api' }, AT_2015);
    assert.ok(s.headers.some(([n, v]) => n === 'x-amz-security-token' && v === 'TOKEN'));
    assert.match(s.headers.at(-1)![1], /SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,/);
    assert.equal(s.canonicalRequest.split('\n')[1], '/a%2520b/c', 'other services sign each segment encoded again');
    assert.ok(s.canonicalRequest.includes('host:h.example:8443\n'));
    for (const text of [s.canonicalRequest, s.stringToSign, JSON.stringify(s.headers)]) assert.ok(!text.includes(secret));
  });

  it('query values are re-encoded with the SigV4 rules; the date format', () => {
    const s = signSigV4({ method: 'GET', target: '/?b=x+y&a=%7e&c', host: 'h', headers: [], body: null }, SUITE, { region: 'r', service: 's' }, AT_2015);
    assert.equal(s.canonicalRequest.split('\n')[2], 'a=~&b=x%20y&c=');
    assert.equal(uriEncode('a b/é~'), 'a%20b%2F%C3%A9~');
    assert.equal(amzDate(new Date('2026-12-01T09:05:07.123Z')), '20261201T090507Z');
  });
});

describe('SigV4 in the request and the catalog', () => {
  const cred = { meta: { name: 'aws', kind: 'aws_sigv4' as const, fields: { access_key_id: 'AKIDEXAMPLE' } }, secret: { secret_access_key: Buffer.from('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY') } };
  const auth = { kind: 'aws_sigv4' as const, region: 'us-east-1', service: 'service' };
  const spec = (over: Partial<HttpRequestSpec> = {}): HttpRequestSpec => ({ origin: 'https://example.amazonaws.com', method: 'GET', path: '/', query: [], headers: [], ...over });
  const codeOf = (f: () => unknown): string => {
    try {
      f();
      return 'ok';
    } catch (e) {
      return isPosternError(e) ? e.code : String(e);
    }
  };

  it('signs last, over every header sent (content-length of a body too), with the clock given', () => {
    const p = prepareRequest(spec({ method: 'POST', body: { contentType: 'application/json', bytes: Buffer.from('{"a":1}') } }), { credential: cred, auth, now: () => AT_2015 }, 'https://example.amazonaws.com');
    const names = p.headers.filter((_, i) => i % 2 === 0);
    assert.deepEqual(names.slice(-2), ['x-amz-date', 'authorization']);
    const authz = p.headers[p.headers.length - 1]!;
    assert.match(authz, /SignedHeaders=accept-encoding;content-length;content-type;host;user-agent;x-amz-date,/);
  });

  it('refuses: no target region/service, no clock, a spec header the signature owns', () => {
    assert.equal(codeOf(() => prepareRequest(spec(), { credential: cred, now: () => AT_2015 }, 'https://example.amazonaws.com')), 'SECRET_INVALID');
    assert.equal(codeOf(() => prepareRequest(spec(), { credential: cred, auth }, 'https://example.amazonaws.com')), 'INTERNAL');
    assert.equal(codeOf(() => prepareRequest(spec({ headers: [['X-Amz-Date', '20200101T000000Z']] }), { credential: cred, auth, now: () => AT_2015 }, 'https://example.amazonaws.com')), 'INPUT_INVALID');
  });

  it('a catalog tool may not set a header of the signature on a SigV4 target', () => {
    const targets = { aws: { http: { origin: 'https://example.amazonaws.com', credential: 'aws', auth: { aws_sigv4: { region: 'us-east-1', service: 's3' } } } } };
    const ok = catalogText({ get: tool([{ revision: 1, http: { target: 'aws', method: 'GET', path: '/', headers: { 'X-Amz-Meta-Color': 'blue' } } }]) }, targets);
    assert.doesNotThrow(() => parseCatalog(ok, 'catalog.yaml'));
    const bad = catalogText({ get: tool([{ revision: 1, http: { target: 'aws', method: 'GET', path: '/', headers: { 'X-Amz-Security-Token': 'x' } } }]) }, targets);
    assert.throws(() => parseCatalog(bad, 'catalog.yaml'), /part of the target's AWS signature/);
    const badScope = catalogText({}, { aws: { http: { origin: 'https://example.amazonaws.com', credential: 'aws', auth: { aws_sigv4: { region: 'US East', service: 's3' } } } } });
    assert.throws(() => parseCatalog(badScope, 'catalog.yaml'), /AWS region/);
  });
});

describe('the query parameters of a signature, on a SigV4 target', () => {
  const targets = {
    aws: { http: { origin: 'https://example.amazonaws.com', credential: 'aws', auth: { aws_sigv4: { region: 'us-east-1', service: 's3' } } } },
    plain: { http: { origin: 'https://plain.example.com', credential: 'tok', auth: 'bearer' } },
  };
  const broad = catalog({ s3: tool([{ revision: 1, http_request: { target: 'aws', methods: ['GET'], paths: ['/bucket/{key}'] } }]), other: tool([{ revision: 1, http_request: { target: 'plain', methods: ['GET'], paths: ['/x'] } }]) }, targets);
  const agentQuery = (toolName: 's3' | 'other', name: string): string => resolveAction(toolOf(broad, toolName).current, { method: 'GET', path: toolName === 's3' ? '/bucket/a.txt' : '/x', query: { [name]: 'v' } }).kind;
  const cred = { meta: { name: 'aws', kind: 'aws_sigv4' as const, fields: { access_key_id: 'AKIDEXAMPLE' } }, secret: { secret_access_key: Buffer.from('wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY') } };
  const auth = { kind: 'aws_sigv4' as const, region: 'us-east-1', service: 's3' };
  const executorRefuses = (name: string): boolean => {
    try {
      prepareRequest({ origin: 'https://example.amazonaws.com', method: 'GET', path: '/bucket/a.txt', query: [[name, 'v']], headers: [] }, { credential: cred, auth, now: () => AT_2015 }, 'https://example.amazonaws.com');
      return false;
    } catch (e) {
      assert.ok(isPosternError(e, 'INPUT_INVALID'), String(e));
      return true;
    }
  };
  const catalogRefuses = (name: string): boolean => {
    try {
      parseCatalog(catalogText({ get: tool([{ revision: 1, input: { type: 'object', properties: {} }, http: { target: 'aws', method: 'GET', path: '/', query: { [name]: 'v' } } }]) }, targets), 'catalog.yaml');
      return false;
    } catch (e) {
      assert.ok(isPosternError(e, 'CATALOG_INVALID'), String(e));
      return true;
    }
  };

  const PRESIGNED = ['X-Amz-Signature', 'X-Amz-Credential', 'X-Amz-Security-Token', 'X-Amz-Algorithm', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Content-Sha256', 'X-Amz-User-Agent', 'X-Amz-Anything-Added-Later'];
  const SPELLINGS = (n: string): string[] => [n, n.toLowerCase(), n.toUpperCase(), n.replaceAll('-', '_'), `${n}[]`, encodeURIComponent(n).replace('-', '%2D'), n.replace('X', '%58'), encodeURIComponent(encodeURIComponent(n).replace('-', '%2D'))];
  const REFUSED = [...PRESIGNED.flatMap(SPELLINGS), 'AWSAccessKeyId', 'awsaccesskeyid', 'Signature', 'SIGNATURE', 'SignatureVersion', 'SignatureMethod'];
  for (const name of REFUSED) {
    it(`${JSON.stringify(name)} is refused by the resolver, the executor and the catalog`, () => {
      assert.equal(agentQuery('s3', name), 'refused');
      assert.ok(executorRefuses(name));
      assert.ok(catalogRefuses(name));
    });
  }
  it('the refusal names the rule, never the value', () => {
    const r = resolveAction(toolOf(broad, 's3').current, { method: 'GET', path: '/bucket/a.txt', query: { 'x-amz-signature': 'agent-made-signature' } });
    assert.equal(r.kind, 'refused');
    assert.match(JSON.stringify(r), /AWS signature/);
    assert.doesNotMatch(JSON.stringify(r), /agent-made-signature/);
  });
  it('ordinary S3 parameters pass, and a target not signed with SigV4 is not concerned', () => {
    for (const name of ['prefix', 'list-type', 'max-keys', 'x-id', 'versionId', 'response-content-type', 'amz', 'x-amzsig']) {
      assert.equal(sigv4QueryParam(name), undefined, name);
      assert.equal(agentQuery('s3', name), 'resolved', name);
      assert.equal(executorRefuses(name), false, name);
    }
    assert.equal(agentQuery('other', 'X-Amz-Signature'), 'resolved');
  });
  it('property: any letter case of any presigned-URL name, percent-encoded anywhere, is refused', () => {
    const spelled = fc
      .tuple(fc.constantFrom(...PRESIGNED), fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }), fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }))
      .map(([n, upper, escape]) => [...n].map((c, i) => {
        const cased = upper[i] === true ? c.toUpperCase() : c.toLowerCase();
        return escape[i] === true ? `%${cased.charCodeAt(0).toString(16).toUpperCase()}` : cased;
      }).join(''));
    fc.assert(
      fc.property(spelled, (name) => {
        assert.notEqual(sigv4QueryParam(name), undefined, name);
        assert.equal(agentQuery('s3', name), 'refused', name);
        assert.ok(executorRefuses(name), name);
      }),
      { numRuns: 300 },
    );
  });
});
