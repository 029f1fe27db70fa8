import type { V1Deployment, V1DeploymentStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { WebhookServer, WebhookServerStatus } from '../../api/webhook-server.ts';
import { instanceStatus } from './status.ts';

const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-01T00:05:00Z';

function instance(replicas: number, status?: WebhookServerStatus): WebhookServer {
  return {
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'ConversionWebhookServer',
    metadata: { name: 'blue', uid: 'u', generation: 3 },
    spec: { default: false, replicas },
    ...(status === undefined ? {} : { status }),
  };
}

function deployment(status: V1DeploymentStatus, generation = 7): V1Deployment {
  return { metadata: { generation }, status: { observedGeneration: generation, ...status } };
}

const settled = deployment({ replicas: 3, readyReplicas: 3, updatedReplicas: 3, availableReplicas: 3 });

const summary = (d: ReturnType<typeof instanceStatus>) =>
  Object.fromEntries(d.status.conditions.map((c) => [c.type, `${c.status}/${c.reason}`]));

describe('instanceStatus', () => {
  it.each([
    {
      name: 'no Deployment yet',
      replicas: 3,
      dep: undefined,
      available: 'False/DeploymentMissing',
      progressing: 'True/DeploymentMissing',
    },
    {
      name: 'settled',
      replicas: 3,
      dep: settled,
      available: 'True/ReplicasAvailable',
      progressing: 'False/RolloutComplete',
    },
    {
      name: 'first replicas starting',
      replicas: 3,
      dep: deployment({ replicas: 3, updatedReplicas: 3, availableReplicas: 0 }),
      available: 'False/NoReplicasAvailable',
      progressing: 'True/RollingOut',
    },
    {
      name: 'rolling: old replicas still serve, so it stays available',
      replicas: 3,
      dep: deployment({ replicas: 4, updatedReplicas: 1, availableReplicas: 3 }),
      available: 'True/ReplicasAvailable',
      progressing: 'True/RollingOut',
    },
    {
      name: 'the Deployment controller has not seen the new spec',
      replicas: 3,
      dep: { metadata: { generation: 8 }, status: { ...settled.status, observedGeneration: 7 } },
      available: 'True/ReplicasAvailable',
      progressing: 'True/RollingOut',
    },
    {
      name: 'stuck past the progress deadline',
      replicas: 3,
      dep: deployment({
        replicas: 4,
        updatedReplicas: 1,
        availableReplicas: 3,
        conditions: [
          {
            type: 'Progressing',
            status: 'False',
            reason: 'ProgressDeadlineExceeded',
            message: 'ReplicaSet "x" has timed out progressing.',
          },
        ],
      }),
      available: 'True/ReplicasAvailable',
      progressing: 'False/ProgressDeadlineExceeded',
    },
    {
      name: 'scaled to zero',
      replicas: 0,
      dep: deployment({}),
      available: 'False/ScaledToZero',
      progressing: 'False/RolloutComplete',
    },
  ])('$name → Available $available, Progressing $progressing', ({
    replicas,
    dep,
    available,
    progressing,
  }) => {
    expect(summary(instanceStatus(instance(replicas), dep, T0))).toEqual({
      Available: available,
      Progressing: progressing,
    });
  });

  it('copies replica counts from the Deployment and observes the instance generation', () => {
    const d = instanceStatus(instance(3), deployment({ ...settled.status, readyReplicas: 2 }), T0);
    expect(d.status).toMatchObject({ observedGeneration: 3, replicas: 3, readyReplicas: 2 });
    expect(d.changed).toBe(true);
  });

  it('reports no change when the status already says it, so a Pod heartbeat writes nothing', () => {
    const first = instanceStatus(instance(3), settled, T0);
    const again = instanceStatus(instance(3, { ...first.status }), settled, T1);
    expect(again.changed).toBe(false);
    expect(again.status).toEqual(first.status);
  });

  it('keeps the transition time while the status holds, moves it when it flips', () => {
    const first = instanceStatus(instance(3), settled, T0);
    const rolling = deployment({ replicas: 4, updatedReplicas: 1, availableReplicas: 3 });
    const next = instanceStatus(instance(3, { ...first.status }), rolling, T1);
    const time = (type: string) => next.status.conditions.find((c) => c.type === type)?.lastTransitionTime;
    expect(time('Available')).toBe(T0);
    expect(time('Progressing')).toBe(T1);
    expect(next.changed).toBe(true);
  });

  it('while its replicas stop for a deletion: not available, progressing towards 0, whatever the spec says', () => {
    const stopping = deployment({
      replicas: 1,
      readyReplicas: 1,
      availableReplicas: 1,
      terminatingReplicas: 2,
    });
    const d = instanceStatus(instance(3), stopping, T0, { stopping: true });
    expect(summary(d)).toEqual({ Available: 'False/Deleting', Progressing: 'True/Deleting' });
    expect(d.status).toMatchObject({ replicas: 1, readyReplicas: 1 });
  });

  it('leaves other concerns’ conditions out of what it applies', () => {
    const other = {
      type: 'DeletionBlocked',
      status: 'False' as const,
      reason: 'NotInUse',
      message: '',
      lastTransitionTime: T0,
    };
    const d = instanceStatus(instance(3, { conditions: [other] }), settled, T0);
    expect(d.status.conditions.map((c) => c.type)).toEqual(['Available', 'Progressing']);
  });
});
