import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { configKeys } from '../config/keys.ts';
import {
  allowancesOf,
  EXTRA_ARG_KEYS,
  EXTRA_ARG_PATTERN,
  type InstancePolicy,
  instancePolicyViolations,
} from './instance-admission.ts';

const POLICY: InstancePolicy = {
  operatorNamespace: 'switchyard-system',
  allowedImageRepositories: [],
  allowServiceAccountName: false,
  allowedExtraArgKeys: [],
};
const argsRefused = (extraArgs: string[]) =>
  instancePolicyViolations({ name: 'a', spec: { extraArgs } }, POLICY, { exists: false });

describe('the flags a user may pass a webhook-server', () => {
  it('are real configuration keys, none of them the bus connection', () => {
    const known = new Set(configKeys.map((k) => k.path));
    for (const key of EXTRA_ARG_KEYS) expect(known.has(key), key).toBe(true);
    expect(EXTRA_ARG_KEYS.some((k) => k.startsWith('nats.') || k.startsWith('bus.'))).toBe(false);
  });

  it('admits --<listed key>=<value> and nothing else (the CEL policy uses the same pattern)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...EXTRA_ARG_KEYS), fc.stringMatching(/^[^\s]+$/), (key, value) => {
        expect(argsRefused([`--${key}=${value}`])).toEqual([]);
      }),
    );
    const unlisted = configKeys
      .map((k) => k.path)
      .filter((k) => !(EXTRA_ARG_KEYS as readonly string[]).includes(k));
    fc.assert(
      fc.property(
        fc.constantFrom(...unlisted, 'config', 'instance', 'port', 'tls-dir'),
        fc.string(),
        (key, value) => {
          expect(argsRefused([`--${key}=${value}`])).toHaveLength(1);
        },
      ),
    );
    // A key with a prefix or suffix of a listed one is another key.
    for (const arg of ['--log.levelx=1', '---log.level=1', '--log.level', '--log.level=', '--log.level=a b'])
      expect(argsRefused([arg]), arg).toHaveLength(1);
  });

  it('is anchored for RE2 as for JavaScript', () => {
    expect(EXTRA_ARG_PATTERN.startsWith('^')).toBe(true);
    expect(EXTRA_ARG_PATTERN.endsWith('$')).toBe(true);
  });
});

describe('what a platform team allows', () => {
  it('reads the ConfigMap as the policy does: lists split on commas and trimmed, true only as "true"', () => {
    expect(
      allowancesOf({
        allowedImageRepositories: ' a/b , ,c ',
        allowServiceAccountName: 'True',
        allowedExtraArgKeys: 'webhook.unsafeDropPlanOnReassign',
      }),
    ).toEqual({
      allowedImageRepositories: ['a/b', 'c'],
      allowServiceAccountName: false,
      allowedExtraArgKeys: ['webhook.unsafeDropPlanOnReassign'],
    });
    expect(allowancesOf(undefined)).toEqual({
      allowedImageRepositories: [],
      allowServiceAccountName: false,
      allowedExtraArgKeys: [],
    });
  });

  it('admits a flag whose key it allows, with a value, and still no other', () => {
    const policy = { ...POLICY, allowedExtraArgKeys: ['webhook.unsafeDropPlanOnReassign'] };
    const refused = (arg: string) =>
      instancePolicyViolations({ name: 'a', spec: { extraArgs: [arg] } }, policy, { exists: false });
    expect(refused('--webhook.unsafeDropPlanOnReassign=true')).toEqual([]);
    expect(refused('--webhook.unsafeDropPlanOnReassign=')).toHaveLength(1);
    expect(refused('--webhook.unsafeDropPlanOnReassign')).toHaveLength(1);
    expect(refused('--nats.url=x')).toHaveLength(1);
  });
});

describe('where an instance may run', () => {
  it('always in the operator’s namespace, elsewhere only where the namespace opted in', () => {
    const at = (namespace: string | undefined, labels: Record<string, string> | undefined) =>
      instancePolicyViolations(
        { name: 'a', spec: { namespace } },
        POLICY,
        labels === undefined ? { exists: false } : { exists: true, labels },
      );
    expect(at(undefined, undefined)).toEqual([]);
    expect(at('switchyard-system', undefined)).toEqual([]);
    expect(at('team-a', { 'switchyard.dev/instances': 'allowed' })).toEqual([]);
    expect(at('team-a', { 'switchyard.dev/instances': 'yes' })).toHaveLength(1);
    expect(at('team-a', {})).toHaveLength(1);
    expect(at('team-a', undefined)).toHaveLength(1);
  });
});
