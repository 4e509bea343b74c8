/**
 * The JWT a GitHub App signs to ask for an installation token: RS256 over
 * `{"alg":"RS256","typ":"JWT"}` and `{ iat, exp, iss }`, with `iat` 60 s in
 * the past (GitHub's advice against clock drift) and `exp` 9 minutes after
 * now (GitHub allows at most 10). Pure: the time comes from the caller.
 * The JWT is a bearer secret for its few minutes (it acts as the whole App):
 * it is sent only to the catalog's GitHub API, the redactor learns it before
 * it is sent (token-endpoint.ts), and the caller zeroes it after the request.
 */
import { createPrivateKey, createSign } from 'node:crypto';

const b64url = (b: Buffer | string): string => Buffer.from(b).toString('base64url');

interface AppJwt {
  readonly jwt: string;
  /** Its `exp` claim: until then GitHub accepts it. */
  readonly expiresAt: Date;
}

export function githubAppJwt(appId: string, privateKeyPem: Uint8Array, now: Date): AppJwt {
  const key = createPrivateKey({ key: Buffer.from(privateKeyPem), format: 'pem' });
  const t = Math.floor(now.getTime() / 1000);
  const header = b64url(JSON.stringify({ alg: 'RS256', typ: 'JWT' }));
  const payload = b64url(JSON.stringify({ iat: t - 60, exp: t + 540, iss: appId }));
  const signature = createSign('RSA-SHA256').update(`${header}.${payload}`).sign(key);
  return { jwt: `${header}.${payload}.${b64url(signature)}`, expiresAt: new Date((t + 540) * 1000) };
}
