// How hard the fuzz suites (`*.fuzz.test.ts`) push: one number for every property, read from
// SWITCHYARD_FUZZ_RUNS, so CI runs thousands of cases per family in well under a minute on two
// cores and a person hunting a bug runs a hundred thousand with the same suites:
//
//   SWITCHYARD_FUZZ_RUNS=100000 npx vitest run --project unit fuzz
//
// A property whose cases are dear (an HTTPS round trip, a 10^4-level body) runs a fraction of
// the number, never fewer than one. fast-check prints the seed and path of a failing case;
// SWITCHYARD_FUZZ_SEED replays a run (with the path, fast-check's `path` parameter, one case).
import type fc from 'fast-check';

/** The default: 2,000 a property keeps the whole pass around half a minute on the 2-core CI machine. */
export const DEFAULT_FUZZ_RUNS = 2_000;

/** The run count a variable asks for: a positive integer, else the default (a typo must not silently fuzz nothing). */
export function fuzzRunsFrom(raw: string | undefined): number {
  if (raw === undefined || raw.trim() === '') return DEFAULT_FUZZ_RUNS;
  const runs = Number(raw);
  if (!Number.isSafeInteger(runs) || runs < 1)
    throw new Error(`SWITCHYARD_FUZZ_RUNS must be a positive integer, not "${raw}"`);
  return runs;
}

export const FUZZ_RUNS = fuzzRunsFrom(process.env.SWITCHYARD_FUZZ_RUNS);

function seedFrom(raw: string | undefined): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const seed = Number(raw);
  if (!Number.isSafeInteger(seed)) throw new Error(`SWITCHYARD_FUZZ_SEED must be an integer, not "${raw}"`);
  return seed;
}

const FUZZ_SEED = seedFrom(process.env.SWITCHYARD_FUZZ_SEED);

/** fast-check parameters for one property: `share` of the run count (dear cases), the seed when one is set. */
export function fuzz<T>(share = 1): fc.Parameters<T> {
  const numRuns = Math.max(1, Math.round(FUZZ_RUNS * share));
  return FUZZ_SEED === undefined ? { numRuns } : { numRuns, seed: FUZZ_SEED };
}

/** Test timeout for a property of `FUZZ_RUNS × share` cases of about `msPerCase` each, with a floor of 30 s. */
export function fuzzTimeoutMs(msPerCase: number, share = 1): number {
  return Math.max(30_000, Math.ceil(FUZZ_RUNS * share * msPerCase * 3));
}

/**
 * The default timeout of a fuzz suite's tests (`vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS })`):
 * a property of the full run count at 5 ms a case, so a larger SWITCHYARD_FUZZ_RUNS is not cut
 * short by vitest's 5 s default. A dearer property passes its own.
 */
export const FUZZ_TEST_TIMEOUT_MS = fuzzTimeoutMs(5);
