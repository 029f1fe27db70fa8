// The verdict a repoint leaves on its target: the instance it pointed the target at and the True
// HandoverReady condition it earned (verified, unverified, first apply, or nothing to move).
//
// Written by the handover in the same server-side apply as the target's spec.conversion, so it
// can never be lost apart from the repoint. The config's status states it afterwards, in a write
// conditional on the config's resourceVersion; when that write loses to a concurrent status
// write (409), the next look finds the target already moved and states this verdict again,
// instead of a bare NoMove. It describes the object it is on: a target deleted and created again
// starts without one.
import { z } from 'zod';
import { HANDOVER_VERDICT_ANNOTATION } from './constants.ts';
import { instanceNameSchema } from './names.ts';

export const VERDICT_REASONS = ['FirstApply', 'NoMove', 'HandoverReady', 'HandoverUnverified'] as const;
export type VerdictReason = (typeof VERDICT_REASONS)[number];

export const handoverVerdictSchema = z.object({
  instance: instanceNameSchema,
  reason: z.enum(VERDICT_REASONS),
  message: z.string().max(32768),
});
export type HandoverVerdict = z.infer<typeof handoverVerdictSchema>;

export function encodeVerdict(verdict: HandoverVerdict): string {
  return JSON.stringify(verdict);
}

/** The verdict a target object carries, or undefined when it has none that parses. */
export function verdictOf(target: unknown): HandoverVerdict | undefined {
  const annotations = (target as { metadata?: { annotations?: Record<string, string> } } | undefined)
    ?.metadata?.annotations;
  const value = annotations?.[HANDOVER_VERDICT_ANNOTATION];
  if (value === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(value);
  } catch {
    return undefined;
  }
  const parsed = handoverVerdictSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}
