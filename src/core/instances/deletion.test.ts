import { describe, expect, it } from 'vitest';
import { FORCE_DELETE_ANNOTATION } from '../../api/constants.ts';
import type { ConfigSubject, InstanceLike } from '../assignment.ts';
import { type DeletionInput, decideDeletion, MAX_LISTED_TARGETS } from './deletion.ts';

const cws = (name: string, spec: InstanceLike['spec'] = {}): InstanceLike => ({ metadata: { name }, spec });
const config = (target: string, pinnedTo?: string): ConfigSubject => ({
  config: `CRDConversionConfig/${target}`,
  target,
  pinnedTo,
});

function input(over: Partial<DeletionInput> & { annotations?: Record<string, string> }): DeletionInput {
  return {
    instance: { metadata: { name: 'blue', annotations: over.annotations } },
    fleet: over.fleet ?? [cws('blue'), cws('green', { default: true })],
    configs: over.configs ?? [],
    targetServices: over.targetServices ?? new Map(),
  };
}

describe('decideDeletion', () => {
  it.each([
    { name: 'nothing depends on it', over: {}, action: 'allow', byKind: {} },
    {
      name: 'a config pinned to it',
      over: { configs: [config('a.x.io', 'blue')] },
      action: 'block',
      byKind: { Pinned: 1 },
    },
    {
      name: 'it is the default for an unpinned config',
      over: { fleet: [cws('blue', { default: true })], configs: [config('a.x.io')] },
      action: 'block',
      byKind: { Default: 1 },
    },
    {
      name: 'the pool assigns it a target',
      over: { fleet: [cws('blue', { sharding: { enabled: true } })], configs: [config('a.x.io')] },
      action: 'block',
      byKind: { Pool: 1 },
    },
    {
      name: 're-pinned away, but the live target still names its Service (handover not patched yet)',
      over: {
        configs: [config('a.x.io', 'green')],
        targetServices: new Map([['a.x.io', ['blue-webhook-server']]]),
      },
      action: 'block',
      byKind: { NamedInConversion: 1 },
    },
    {
      name: 'an XRD moved away, but a CRD Crossplane generated from it still names its Service',
      over: {
        configs: [config('a.x.io', 'green')],
        targetServices: new Map([['a.x.io', ['blue-webhook-server', 'green-webhook-server']]]),
      },
      action: 'block',
      byKind: { NamedInConversion: 1 },
    },
    {
      name: 'a target names another instance whose name it prefixes',
      over: { targetServices: new Map([['a.x.io', ['blue-2-webhook-server']]]) },
      action: 'allow',
      byKind: {},
    },
    {
      name: 'moved away and patched',
      over: {
        configs: [config('a.x.io', 'green')],
        targetServices: new Map([['a.x.io', ['green-webhook-server']]]),
      },
      action: 'allow',
      byKind: {},
    },
  ])('$name → $action', ({ over, action, byKind }) => {
    const d = decideDeletion(input(over));
    expect(d.action).toBe(action);
    expect(d.dependents.byKind).toEqual(byKind);
  });

  it('counts a target that both resolves to it and names it once', () => {
    const d = decideDeletion(
      input({
        configs: [config('a.x.io', 'blue')],
        targetServices: new Map([['a.x.io', ['blue-webhook-server']]]),
      }),
    );
    expect(d.dependents).toEqual({
      count: 1,
      listed: ['a.x.io'],
      byKind: { Pinned: 1, NamedInConversion: 1 },
    });
  });

  it('blocks with a DeletionBlocked condition that names the targets and how to move them', () => {
    const d = decideDeletion(input({ configs: [config('b.x.io', 'blue'), config('a.x.io', 'blue')] }));
    expect(d.condition).toMatchObject({
      type: 'DeletionBlocked',
      status: 'True',
      reason: 'TargetsStillServed',
    });
    expect(d.condition.message).toContain('2 target(s) still depend on it (a.x.io, b.x.io)');
    expect(d.condition.message).toContain('re-pin the 2 config(s)');
    expect(d.condition.message).toContain(FORCE_DELETE_ANNOTATION);
  });

  it(`lists at most ${MAX_LISTED_TARGETS} targets, sorted, and counts the rest`, () => {
    const configs = Array.from({ length: 50 }, (_, i) =>
      config(`t${String(i).padStart(2, '0')}.x.io`, 'blue'),
    );
    const d = decideDeletion(input({ configs }));
    expect(d.dependents.count).toBe(50);
    expect(d.dependents.listed).toEqual(configs.slice(0, MAX_LISTED_TARGETS).map((c) => c.target));
    expect(d.condition.message).toContain('and 30 more');
  });

  it.each([
    { value: 'true', action: 'allow' },
    { value: 'True', action: 'block' },
    { value: 'yes', action: 'block' },
  ])('break-glass annotation "$value" → $action', ({ value, action }) => {
    const d = decideDeletion(
      input({ configs: [config('a.x.io', 'blue')], annotations: { [FORCE_DELETE_ANNOTATION]: value } }),
    );
    expect(d.action).toBe(action);
    if (d.action === 'allow') expect(d.reason).toBe('ForceDeleteAnnotated');
  });
});
