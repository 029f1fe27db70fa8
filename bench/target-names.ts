// Reproducible, realistic target names for the benchmarks: CRD and XRD names of the form
// `<plural>.<group>`, built from words a platform team would use, averaging ~36 bytes like the
// corpus the issue measured the reference encoding on.
import { seededRandom } from '../src/scenario/seeded-random.ts';

const KINDS = [
  'bucket',
  'database',
  'cluster',
  'queue',
  'topic',
  'cache',
  'gateway',
  'route',
  'certificate',
  'secretstore',
  'network',
  'subnet',
  'firewall',
  'instance',
  'volume',
  'snapshot',
  'backup',
  'policy',
  'role',
  'binding',
  'user',
  'group',
  'project',
  'namespace',
  'quota',
  'alert',
  'dashboard',
  'pipeline',
  'job',
  'schedule',
  'function',
  'service',
  'endpoint',
  'listener',
  'loadbalancer',
  'dnsrecord',
  'zone',
  'registry',
  'repository',
  'index',
  'stream',
  'table',
  'account',
  'key',
  'vault',
  'tenant',
  'workspace',
  'environment',
  'release',
  'app',
];
const QUALIFIERS = [
  '',
  '',
  '',
  'postgres',
  'mysql',
  'redis',
  'kafka',
  'object',
  'managed',
  'regional',
  'global',
  'private',
  'public',
  'shared',
  'edge',
  'serverless',
  'replicated',
  'scheduled',
  'composite',
  'external',
];
const DOMAINS = [
  'storage',
  'data',
  'compute',
  'network',
  'security',
  'platform',
  'observability',
  'identity',
  'messaging',
  'delivery',
  'analytics',
  'ml',
  'billing',
  'infra',
  'database',
  'apps',
  'edge',
  'iam',
  'dns',
  'ops',
];
const ORGS = [
  'acme',
  'initech',
  'globex',
  'umbrella',
  'hooli',
  'stark',
  'wayne',
  'tyrell',
  'cyberdyne',
  'soylent',
  'aperture',
  'blackmesa',
  'vandelay',
  'wonka',
  'oscorp',
  'massive',
  'nakatomi',
  'gringotts',
  'monarch',
  'dunder',
];
const TLDS = ['io', 'com', 'dev', 'cloud', 'net', 'org'];

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

function oneName(random: () => number): string {
  const plural = `${pick(random, QUALIFIERS)}${pick(random, KINDS)}s`;
  const team =
    random() < 0.5 ? `${pick(random, DOMAINS)}.` : `${pick(random, DOMAINS)}-${Math.floor(random() * 100)}.`;
  return `${plural}.${team}${pick(random, ORGS)}.${pick(random, TLDS)}`;
}

/** `count` distinct target names, the same for the same seed. */
export function targetNames(count: number, seed = 20240601): string[] {
  const random = seededRandom(seed);
  const names = new Set<string>();
  while (names.size < count) names.add(oneName(random));
  return [...names];
}
