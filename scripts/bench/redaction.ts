/**
 * Benchmark: redaction of a response body, Postern's single-pass redactor vs
 * a naive baseline (one replaceAll per secret form), side by side in one
 * process on the same inputs. Reports medians and the ratio; it asserts
 * nothing about absolute time (these machines are shared and noisy). Two
 * bodies: one long base64 line (no whitespace or escapes: the decoded view
 * is skipped) and pretty-printed JSON text (whitespace on every line: the
 * decoded view is built and scanned). The naive baseline matches literal
 * forms only; it recognizes neither views nor wrapped forms.
 */
import { randomBytes } from 'node:crypto';
import { createRedactor, secretForms, redactionMarker } from '../../src/redaction/index.js';
import { report, type Figure } from './report.js';

const SECRETS = 24;
const BODY_BYTES = 256 * 1024;
const ROUNDS = Number(process.env['BENCH_ROUNDS'] ?? 15);

const secrets = Array.from({ length: SECRETS }, (_, i) => ({ name: `cred-${i}`, bytes: Buffer.from(randomBytes(24).toString('base64url')) }));
const filler = randomBytes(BODY_BYTES).toString('base64').slice(0, BODY_BYTES);
const planted = Buffer.from(secrets[3]!.bytes).toString('hex');
const bodies: [string, string][] = [
  ['base64 line', `${filler.slice(0, 5000)}${planted}${filler.slice(5000)}`],
  ['pretty JSON', prettyJson().replace('"id-17"', `"${planted}"`)],
];

function prettyJson(): string {
  const items: unknown[] = [];
  for (let i = 0; JSON.stringify(items, null, 2).length < BODY_BYTES - 200; i++) {
    for (let k = 0; k < 64; k++) items.push({ id: `id-${i * 64 + k}`, name: `item ${i * 64 + k}`, tags: ['a', 'b'], note: randomBytes(12).toString('base64') });
  }
  return JSON.stringify(items, null, 2);
}

const redactor = createRedactor(secrets);
const naiveForms = secrets.flatMap((s) => {
  const f = secretForms(s.bytes);
  return [...f.substrings, ...f.wholeValues].filter((x) => x.length >= 4).map((text) => ({ text, marker: redactionMarker(s.name) }));
});
function naive(s: string): string {
  let out = s;
  for (const f of naiveForms) out = out.replaceAll(f.text, f.marker);
  return out;
}

function median(fn: () => string): number {
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

const figures: Figure[] = [];
for (const [name, body] of bodies) {
  if (!redactor.redactText(body).includes('[REDACTED:cred-3]') || !naive(body).includes('[REDACTED:cred-3]')) {
    throw new Error('both redactors must find the planted secret');
  }
  // Interleave to share the machine's noise.
  const ours: number[] = [];
  const base: number[] = [];
  for (let i = 0; i < 3; i++) {
    ours.push(median(() => redactor.redactText(body)));
    base.push(median(() => naive(body)));
  }
  const m = (xs: number[]): number => xs.sort((a, b) => a - b)[1]!;
  console.log(`redaction of ${Math.round(body.length / 1024)} KiB (${name}) against ${SECRETS} secrets (${naiveForms.length} forms)`);
  console.log(`  postern single pass : ${m(ours).toFixed(2)} ms (median)`);
  console.log(`  naive replaceAll    : ${m(base).toFixed(2)} ms (median)`);
  console.log(`  ratio postern / naive = ${(m(ours) / m(base)).toFixed(2)}`);
  figures.push({ name: `redact ${Math.round(body.length / 1024)} KiB, ${name}`, value: m(ours), unit: 'ms', baseline: 'naive replaceAll', baselineValue: m(base), ratio: m(ours) / m(base) });
}
report('redaction', `redaction against ${SECRETS} secrets, single pass vs naive replaceAll`, figures, ['the naive pass matches literal forms only (no decoded views, no wrapped forms)']);
