/**
 * Secret redaction: recognizes vault secrets in their common encodings —
 * also wrapped in lines or escaped character by character — and replaces
 * them with `[REDACTED:<credential name>]`. The one place that decides what
 * is recognized (encodings.ts, views.ts), for the HTTP and SSH paths alike;
 * docs/threat-model.md lists it. Pure logic, no I/O; the
 * daemon builds one redactor per call from `injectedForms()` of the
 * credentials it used and runs every result, error and journal record
 * through it.
 */
export { createRedactor, redactionMarker } from './redactor.js';
export type { NamedSecret, Redactor, SecretHit, SecretInput } from './redactor.js';
export { exposureKeyId, parseFingerprint, valueFingerprint } from './fingerprint.js';
export type { ParsedFingerprint } from './fingerprint.js';
export { injectedForms } from './injected-forms.js';
export type { RedactableCredential } from './injected-forms.js';
export { MIN_SUBSTRING_BYTES, percentEncodeComponent, secretForms } from './encodings.js';
export type { SecretForms } from './encodings.js';
