import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SWITCHYARD_NODE_OPTIONS } from '../src/api/constants.ts';

/**
 * The environment a bench runs a Switchyard process in, as its Deployment runs it: the
 * NODE_OPTIONS every Deployment gives it (src/api/constants.ts), unless NODE_OPTIONS is set to
 * compare, and a compile cache, which `switchyard` enables (src/cli/main.ts; the image ships a
 * filled one). Without it every process also loads Node's TypeScript stripper (~17 MiB of RSS).
 * The cache is Node's default directory, the one `switchyard` uses outside the image; the first
 * process of a run fills it.
 */
export function deployedEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    ...process.env,
    NODE_OPTIONS: process.env.NODE_OPTIONS ?? SWITCHYARD_NODE_OPTIONS,
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'node-compile-cache'),
    ...extra,
  };
}
