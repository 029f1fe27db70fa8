// Loads the process configuration from, in increasing precedence: the schema's
// defaults, a config file (YAML or JSON), environment variables SWITCHYARD_*,
// and command-line flags --<key>=<value>. One parse of the merged result by the
// one schema; errors name the key, the offending value and where it came from.
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { type ConfigKey, configKeys, configSections, ENV_PREFIX, envNameFor } from './keys.ts';
import { type Config, configSchema } from './schema.ts';

export const CONFIG_FILE_FLAG = '--config';
export const CONFIG_FILE_ENV = `${ENV_PREFIX}CONFIG`;

export interface ConfigSources {
  /** Command-line arguments without node and the script (process.argv.slice(2)). */
  argv?: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
  /** Reads the config file; the real filesystem by default. */
  readFile?: (path: string) => string;
}

export interface LoadedConfig {
  config: Config;
  /** Where each explicitly set key came from, e.g. `{ 'kubernetes.qps': 'flag --kubernetes.qps' }`. */
  origins: Record<string, string>;
  /** Arguments that are not configuration (positional arguments, component-specific flags). */
  rest: string[];
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Tree = Record<string, unknown>;
interface Layer {
  values: Tree;
  origins: Record<string, string>;
}

const keysByPath = new Map(configKeys.map((k) => [k.path, k]));
const keysByEnv = new Map(configKeys.map((k) => [k.env, k]));

export function loadConfig(sources: ConfigSources = {}): LoadedConfig {
  const argv = sources.argv ?? process.argv.slice(2);
  const env = sources.env ?? process.env;
  const problems: string[] = [];

  const flags = readFlags(argv, problems);
  const filePath = flags.filePath ?? env[CONFIG_FILE_ENV];
  const layers = [
    filePath
      ? readConfigFile(filePath, sources.readFile ?? ((p) => readFileSync(p, 'utf8')), problems)
      : empty(),
    readEnv(env, problems),
    flags.layer,
  ];
  if (problems.length > 0) throw new ConfigError(problems);

  const merged: Layer = empty();
  for (const layer of layers) {
    deepMerge(merged.values, layer.values);
    Object.assign(merged.origins, layer.origins);
  }
  const parsed = configSchema.safeParse(merged.values);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((i) => describeIssue(i, merged)));
  return { config: parsed.data, origins: merged.origins, rest: flags.rest };
}

function empty(): Layer {
  return { values: {}, origins: {} };
}

function setPath(tree: Tree, path: string, value: unknown): void {
  const segments = path.split('.');
  let node = tree;
  for (const segment of segments.slice(0, -1)) {
    if (!isTree(node[segment])) node[segment] = {};
    node = node[segment] as Tree;
  }
  node[segments.at(-1) as string] = value;
}

function getPath(tree: Tree, path: readonly PropertyKey[]): unknown {
  let node: unknown = tree;
  for (const segment of path) node = isTree(node) ? node[String(segment)] : undefined;
  return node;
}

function isTree(value: unknown): value is Tree {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(into: Tree, from: Tree): void {
  for (const [key, value] of Object.entries(from)) {
    if (isTree(value) && isTree(into[key])) deepMerge(into[key] as Tree, value);
    else into[key] = value;
  }
}

function readFlags(argv: readonly string[], problems: string[]) {
  const layer = empty();
  const rest: string[] = [];
  let filePath: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const match = /^--([^=]+)(?:=(.*))?$/s.exec(arg);
    const name = match?.[1];
    const isConfigFlag = name !== undefined && (name === 'config' || name.includes('.'));
    if (!match || !name || !isConfigFlag) {
      rest.push(arg);
      continue;
    }
    let value = match[2];
    if (value === undefined) {
      value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) {
        problems.push(`flag --${name} needs a value (--${name}=<value>)`);
        continue;
      }
      i++;
    }
    if (name === 'config') {
      filePath = value;
      continue;
    }
    const key = keysByPath.get(name);
    if (!key) {
      problems.push(`unknown flag --${name}${suggestion(name)}`);
      continue;
    }
    setPath(layer.values, key.path, value);
    layer.origins[key.path] = `flag ${key.flag}`;
  }
  return { layer, rest, filePath };
}

function readEnv(env: Readonly<Record<string, string | undefined>>, problems: string[]): Layer {
  const layer = empty();
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || !name.startsWith(ENV_PREFIX)) continue;
    const key = keysByEnv.get(name);
    if (key) {
      setPath(layer.values, key.path, value);
      layer.origins[key.path] = `env ${name}`;
    } else if (configSections.some((s) => name.startsWith(`${envNameFor(s)}_`))) {
      // SWITCHYARD_BIN_DIR and the like belong to scripts; a name under a
      // configuration section that matches no key is a typo worth stopping for.
      problems.push(`unknown environment variable ${name}${suggestionForEnv(name)}`);
    }
  }
  return layer;
}

function readConfigFile(path: string, readFile: (path: string) => string, problems: string[]): Layer {
  const layer = empty();
  let values: unknown;
  try {
    values = parseYaml(readFile(path)) ?? {};
  } catch (err) {
    problems.push(`config file ${path}: ${(err as Error).message}`);
    return layer;
  }
  if (!isTree(values)) {
    problems.push(`config file ${path}: expected a mapping of sections (kubernetes:, nats:, …)`);
    return layer;
  }
  layer.values = values;
  for (const key of configKeys) {
    if (getPath(values, key.path.split('.')) !== undefined) layer.origins[key.path] = `file ${path}`;
  }
  return layer;
}

function describeIssue(issue: z.core.$ZodIssue, merged: Layer): string {
  const path = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    // Flags and environment variables are checked against the keys when read,
    // so an unknown key can only come from the config file.
    return issue.keys
      .map((k) => [path, k].filter(Boolean).join('.'))
      .map((full) => `${full}: unknown key in the config file${suggestion(full)}`)
      .join('; ');
  }
  const value = getPath(merged.values, issue.path);
  const origin = merged.origins[path];
  const key = keysByPath.get(path);
  const hint = key ? ` (expected ${key.type})` : '';
  return `${path}: ${issue.message} — got ${JSON.stringify(value)}${origin ? ` from ${origin}` : ''}${hint}`;
}

function closest(
  name: string,
  candidates: readonly ConfigKey[],
  field: 'path' | 'env',
): ConfigKey | undefined {
  const lower = name.toLowerCase();
  return candidates.find((k) => k[field].toLowerCase() === lower);
}

function suggestion(path: string): string {
  const match = closest(path, configKeys, 'path');
  return match ? ` (did you mean ${match.path}?)` : '';
}

function suggestionForEnv(name: string): string {
  const match = configKeys.find((k) => k.env.replaceAll('_', '') === name.replaceAll('_', ''));
  return match ? ` (did you mean ${match.env}?)` : '';
}
