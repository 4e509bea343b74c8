/**
 * How many rounds a stress loop runs: `fallback` in `npm test` (enough to
 * prove the loop and its assertions work), more from POSTERN_STRESS_ROUNDS
 * (`npm run test:stress` sets 25) when hunting a rare interleaving.
 */
export function stressRounds(fallback: number): number {
  const raw = process.env['POSTERN_STRESS_ROUNDS'];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`POSTERN_STRESS_ROUNDS must be a positive integer, not ${raw}`);
  return n;
}
