// The configuration keys, derived from the schema: each leaf's dotted path, the
// environment variable and flag that set it, its default and description.
// Nothing here is maintained by hand, so a key added to the schema is settable
// everywhere and documented at once.
import { z } from 'zod';
import { configSchema } from './schema.ts';

export interface ConfigKey {
  /** Dotted path, e.g. `kubernetes.eventQPS`. */
  path: string;
  /** e.g. `SWITCHYARD_KUBERNETES_EVENT_QPS`. */
  env: string;
  /** e.g. `--kubernetes.eventQPS`. */
  flag: string;
  type: string;
  default: unknown;
  description: string;
}

export const ENV_PREFIX = 'SWITCHYARD_';

/** camelCase segments to UPPER_SNAKE: `eventQPS` → `EVENT_QPS`, `fanoutRatePerSecond` → `FANOUT_RATE_PER_SECOND`. */
export function envNameFor(path: string): string {
  const snake = path
    .split('.')
    .map((segment) => segment.replace(/([a-z\d])([A-Z])/g, '$1_$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2'))
    .join('_');
  return ENV_PREFIX + snake.toUpperCase();
}

interface JsonSchemaNode {
  type?: string;
  enum?: unknown[];
  default?: unknown;
  description?: string;
  minimum?: number;
  exclusiveMinimum?: number;
  properties?: Record<string, JsonSchemaNode>;
}

function typeOf(node: JsonSchemaNode): string {
  if (node.enum) return node.enum.map((v) => JSON.stringify(v)).join(' | ');
  const bound =
    node.exclusiveMinimum !== undefined
      ? ` > ${node.exclusiveMinimum}`
      : node.minimum !== undefined
        ? ` ≥ ${node.minimum}`
        : '';
  return `${node.type ?? 'any'}${bound}`;
}

function leaves(node: JsonSchemaNode, prefix: string[]): ConfigKey[] {
  if (node.type === 'object' && node.properties) {
    return Object.entries(node.properties).flatMap(([name, child]) => leaves(child, [...prefix, name]));
  }
  const path = prefix.join('.');
  return [
    {
      path,
      env: envNameFor(path),
      flag: `--${path}`,
      type: typeOf(node),
      default: node.default,
      description: node.description ?? '',
    },
  ];
}

export const configKeys: readonly ConfigKey[] = leaves(
  z.toJSONSchema(configSchema, { io: 'output', unrepresentable: 'any' }) as JsonSchemaNode,
  [],
);

/** The top-level sections (`kubernetes`, `nats`, …): env names under them are reserved for keys. */
export const configSections: readonly string[] = [
  ...new Set(configKeys.map((k) => k.path.split('.')[0] as string)),
];
