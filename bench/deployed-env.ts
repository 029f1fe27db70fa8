import { SWITCHYARD_NODE_OPTIONS } from '../src/api/constants.ts';

/**
 * The environment a bench runs a Switchyard process in: its own, with the NODE_OPTIONS every
 * Deployment gives the process (src/api/constants.ts), unless NODE_OPTIONS is set to compare.
 */
export function deployedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, NODE_OPTIONS: process.env.NODE_OPTIONS ?? SWITCHYARD_NODE_OPTIONS, ...extra };
}
