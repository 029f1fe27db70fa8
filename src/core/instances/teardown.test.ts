import type { V1Deployment, V1DeploymentStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { Condition } from '../../api/conditions.ts';
import { DELETION_BLOCKED } from './deletion.ts';
import { TERMINATION_GRACE_SECONDS } from './render.ts';
import { decideStop, STOP_WAIT_MS, stoppingCondition, wasStopped } from './teardown.ts';

const NOW = Date.parse('2026-01-01T00:10:00Z');

/** The Deployment after the scale to 0: generation 4, observed up to `observedGeneration`. */
function scaled(status: V1DeploymentStatus, replicas = 0): V1Deployment {
  return { metadata: { generation: 4 }, spec: { replicas } as V1Deployment['spec'], status };
}

const condition = (status: 'True' | 'False', sinceMs: number): Condition => ({
  type: DELETION_BLOCKED,
  status,
  reason: status === 'True' ? 'TargetsStillServed' : 'NotInUse',
  message: '…',
  lastTransitionTime: new Date(sinceMs).toISOString(),
});

describe('decideStop', () => {
  it('waits out the grace the kubelet gives a Pod, and then some: the bound is no guess', () => {
    expect(STOP_WAIT_MS).toBeGreaterThan(TERMINATION_GRACE_SECONDS * 1000);
  });

  it.each([
    {
      name: 'the controller has not seen the scale to 0 yet (status of the previous generation)',
      status: { observedGeneration: 3, replicas: 2, terminatingReplicas: 0 },
      says: 'has not yet observed the scale to 0',
    },
    {
      name: 'Pods told to stop count as terminating, not as replicas: status.replicas is already 0',
      status: { observedGeneration: 4, terminatingReplicas: 2 },
      says: '0 running, 2 terminating',
    },
    {
      name: 'one Pod not yet told to stop',
      status: { observedGeneration: 4, replicas: 1, terminatingReplicas: 1 },
      says: '1 running, 1 terminating',
    },
    {
      name: 'a cluster that does not report terminating Pods: nothing says when they are gone',
      status: { observedGeneration: 4 },
      says: 'does not report terminating Pods',
    },
  ])('waits while $name', ({ status, says }) => {
    const stop = decideStop({ deployment: scaled(status), deletionCondition: undefined, nowMs: NOW });
    expect(stop).toMatchObject({ action: 'wait', recheckAtMs: NOW + STOP_WAIT_MS });
    expect(stop.message).toContain(says);
  });

  it('releases once the Deployment reports no replica running or terminating', () => {
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4, terminatingReplicas: 0 }),
      deletionCondition: condition('False', NOW - 5_000),
      nowMs: NOW,
    });
    expect(stop).toMatchObject({ action: 'release', reason: 'ReplicasStopped' });
  });

  it('does not take a scale the controller has not observed for a stopped one', () => {
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4, terminatingReplicas: 0 }, 2),
      deletionCondition: undefined,
      nowMs: NOW,
    });
    expect(stop.action).toBe('wait');
  });

  it('releases at once when there is no Deployment (its namespace is gone)', () => {
    expect(decideStop({ deployment: undefined, deletionCondition: undefined, nowMs: NOW })).toMatchObject({
      action: 'release',
      reason: 'NoDeployment',
    });
  });

  it('counts the bound from the condition’s flip to False, which survives a restart of the handler', () => {
    const since = NOW - 20_000;
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4, terminatingReplicas: 1 }),
      deletionCondition: condition('False', since),
      nowMs: NOW,
    });
    expect(stop).toMatchObject({ action: 'wait', recheckAtMs: since + STOP_WAIT_MS });
  });

  it('starts the bound now while the condition still says the deletion was blocked by targets', () => {
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4, terminatingReplicas: 1 }),
      deletionCondition: condition('True', NOW - 3_600_000),
      nowMs: NOW,
    });
    expect(stop).toMatchObject({ action: 'wait', recheckAtMs: NOW + STOP_WAIT_MS });
  });

  it.each([
    {
      name: 'a Pod stuck terminating (its node unreachable)',
      status: { observedGeneration: 4, terminatingReplicas: 1 },
    },
    { name: 'no Deployment controller', status: { observedGeneration: 3, replicas: 2 } },
    { name: 'a replica never told to stop', status: { observedGeneration: 4, replicas: 1 } },
  ])('releases past the bound, saying what was left: $name', ({ status }) => {
    const stop = decideStop({
      deployment: scaled(status),
      deletionCondition: condition('False', NOW - STOP_WAIT_MS),
      nowMs: NOW,
    });
    expect(stop).toMatchObject({ action: 'release', reason: 'StopWaitExpired' });
    expect(stop.message).toContain('cannot withdraw its Lease');
  });

  it('releases a cluster that does not report terminating Pods once their grace has passed, as no failure', () => {
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4 }),
      deletionCondition: condition('False', NOW - STOP_WAIT_MS),
      nowMs: NOW,
    });
    expect(stop).toMatchObject({ action: 'release', reason: 'GraceElapsed' });
  });

  it('reads a condition time it cannot parse as now, never as long ago', () => {
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4, terminatingReplicas: 1 }),
      deletionCondition: { ...condition('False', 0), lastTransitionTime: 'yesterday' },
      nowMs: NOW,
    });
    expect(stop).toMatchObject({ action: 'wait', recheckAtMs: NOW + STOP_WAIT_MS });
  });
});

describe('stoppingCondition', () => {
  it('says False (nothing holds the deletion, no one needs to act), why, and what is still awaited', () => {
    const stop = decideStop({
      deployment: scaled({ observedGeneration: 4, terminatingReplicas: 2 }),
      deletionCondition: undefined,
      nowMs: NOW,
    });
    if (stop.action !== 'wait') throw new Error('expected a wait');
    const allowed = {
      type: DELETION_BLOCKED,
      status: 'False' as const,
      reason: 'NotInUse',
      message: 'no target resolves to or names this instance',
    };
    expect(stoppingCondition(allowed, stop)).toEqual({
      type: DELETION_BLOCKED,
      status: 'False',
      reason: 'NotInUse',
      message: `no target resolves to or names this instance; scaled to 0, waiting for its replicas to stop (0 running, 2 terminating) so each withdraws its Lease while its ServiceAccount and Role still exist; released at ${new Date(NOW + STOP_WAIT_MS).toISOString()} at the latest`,
    });
  });
});

describe('wasStopped', () => {
  it.each([
    { name: 'scaled to 0 by a stop', spec: 2, deployed: 0, expected: true },
    { name: 'never stopped', spec: 2, deployed: 2, expected: false },
    { name: 'an instance of 0 replicas', spec: 0, deployed: 0, expected: false },
  ])('$name: $expected', ({ spec, deployed, expected }) => {
    expect(wasStopped({ spec: { replicas: spec } }, scaled({}, deployed))).toBe(expected);
  });

  it('no Deployment: nothing to restore', () => {
    expect(wasStopped({ spec: { replicas: 2 } }, undefined)).toBe(false);
  });
});
