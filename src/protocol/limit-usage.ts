/**
 * How much of a tool's limits is used, as it crosses to the operator (the
 * approval card) and the audit: plain data, validated on receipt. The limit
 * names are defined here, once; the catalog's `limits:` uses the same names.
 */
import { z } from 'zod';

export const LimitNames = ['per_minute', 'per_session', 'per_run', 'in_flight'] as const;
export type LimitName = (typeof LimitNames)[number];

export const LimitUsageSchema = z.object({
  limit: z.enum(LimitNames),
  /** Calls counted against the limit so far (executed: in the last minute, this session, this run; or running now). */
  used: z.number().int().nonnegative(),
  max: z.number().int().positive(),
});
export type LimitUsage = z.infer<typeof LimitUsageSchema>;

const SCOPE: Record<LimitName, string> = {
  per_minute: 'in the last minute',
  per_session: 'this session',
  per_run: 'this run',
  in_flight: 'running now',
};

/** "3 of 10 this session". */
export function describeUsage(u: LimitUsage): string {
  return `${u.used} of ${u.max} ${SCOPE[u.limit]}`;
}
