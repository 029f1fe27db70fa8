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

/** mulberry32: uniform in [0, 1), the same sequence for the same seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
