// The suite's one source of chance (which Pod is killed, how long after a move's write the fault
// lands), seeded so that a run can be taken again: SWITCHYARD_CHAOS_SEED=<n> replays the choices
// of the run that printed it.

/** The seed of this run: SWITCHYARD_CHAOS_SEED, or one drawn now. */
export function chaosSeed(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.SWITCHYARD_CHAOS_SEED;
  if (given === undefined || given === '') return Math.floor(Math.random() * 2 ** 31);
  const seed = Number(given);
  if (!Number.isInteger(seed) || seed < 0)
    throw new Error(`SWITCHYARD_CHAOS_SEED=${given}: expected an integer ≥ 0`);
  return seed;
}

export { seededRandom } from '../../../src/scenario/seeded-random.ts';
