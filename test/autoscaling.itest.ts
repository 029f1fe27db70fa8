// deploy/autoscaling's ScaledObject for the handover, run by a real KEDA against the local stack: a
// backlog on the last of the handover's 64 partitions scales its Deployment through KEDA's
// HorizontalPodAutoscaler, read from a NATS server's monitoring port behind the NATS Pod's gate.
// The bus is the test's own, so that no handler of another test drains the backlog.
import { join } from 'node:path';
import {
  AppsV1Api,
  AutoscalingV2Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderScaledObjects, SCALED_HANDLERS } from '../src/api/scaled-objects.ts';
import { ensureConsumer, planHandlerConsumers } from '../src/bus/runtime/consumers.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { HANDOVER_WORK } from '../src/handlers/handover/wakes.ts';
import { HANDOVER } from '../src/handlers/handover.ts';
import { type MonitorGate, startMonitorGate } from '../src/nats-pod/monitor-gate.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { type RunningKeda, startKeda } from './support/keda.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { waitFor } from './support/wait.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'autoscaling-itest' });
const cluster = useLocalCluster();
const DEPLOYMENT = `switchyard-${HANDOVER}`;
const PARTITIONS = defaultConfig().bus.partitions[HANDOVER_WORK.partitionsOf];
const LAST_PARTITION = PARTITIONS - 1;
const LAG_THRESHOLD = lagThresholdOf(HANDOVER);

function lagThresholdOf(name: string): number {
  const handler = SCALED_HANDLERS.find((h) => h.name === name);
  if (!handler) throw new Error(`src/api/scaled-objects.ts scales no handler named ${name}`);
  return handler.lagThreshold;
}

interface ScaledObject {
  metadata: { name: string; namespace: string };
  spec: {
    minReplicaCount: number;
    triggers: { type: string; metadata: Record<string, string> }[];
  };
}

let admin: KubeConfig;
let bus: OwnBus;
let gate: MonitorGate;
let keda: RunningKeda;
let namespace: string;

/** deploy/autoscaling's ScaledObject of the handover, in the test's namespace, reading the gate. */
function handoverScaledObject(gatePort: number): ScaledObject {
  const all = parseAllDocuments(renderScaledObjects()).map((d) => d.toJS() as ScaledObject);
  const object = all.find((o) => o.metadata.name === DEPLOYMENT);
  if (!object) throw new Error(`deploy/autoscaling has no ScaledObject ${DEPLOYMENT}`);
  object.metadata.namespace = namespace;
  for (const trigger of object.spec.triggers) {
    trigger.metadata.natsServerMonitoringEndpoint = `127.0.0.1:${gatePort}`;
  }
  return object;
}

/** Keys whose work lands on `partition` of the handover, as the runtime partitions them. */
function keysOnPartition(partition: number, count: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < count; i++) {
    const key = `widgets-${i}.example.com`;
    if (HANDOVER_WORK.workSubject(key, PARTITIONS).startsWith(`work.${HANDOVER}.${partition}.`))
      keys.push(key);
  }
  return keys;
}

async function deploymentReplicas(): Promise<number> {
  const d = await admin.makeApiClient(AppsV1Api).readNamespacedDeployment({ namespace, name: DEPLOYMENT });
  return d.spec?.replicas ?? 0;
}

async function idleDeployment(): Promise<void> {
  const labels = { app: DEPLOYMENT };
  await admin.makeApiClient(AppsV1Api).createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name: DEPLOYMENT, labels },
      spec: {
        replicas: 2,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            containers: [{ name: 'main', image: 'switchyard:dev', command: ['test/fixtures/idle.ts'] }],
          },
        },
      },
    },
  });
}

/** The external metrics KEDA's HorizontalPodAutoscaler last read (a quantity per replica), by metric name. */
async function hpaMetrics(): Promise<Map<string, string>> {
  const hpa = await admin
    .makeApiClient(AutoscalingV2Api)
    .readNamespacedHorizontalPodAutoscaler({ namespace, name: `keda-hpa-${DEPLOYMENT}` });
  const metrics = new Map<string, string>();
  for (const m of hpa.status?.currentMetrics ?? []) {
    if (m.external) metrics.set(m.external.metric.name, String(m.external.current.averageValue));
  }
  return metrics;
}

beforeAll(async () => {
  admin = cluster.kubeConfig('admin');
  bus = await startOwnBus();
  // What each handover worker does as it starts: every partition's consumer, none consuming here.
  for (const consumer of planHandlerConsumers(HANDOVER_WORK.consumers(PARTITIONS))) {
    await ensureConsumer(bus.jsm, consumer);
  }
  gate = await startMonitorGate(
    {
      port: 0,
      host: '127.0.0.1',
      upstream: bus.server.monitorUrl,
      passwordFile: join(cluster.info.dir, 'no-monitor-password'),
    },
    log,
  );
  keda = await startKeda({
    admin,
    endpoint: cluster.info.endpoint,
    kubectl: (args) => cluster.kubectl(args),
    dir: join(cluster.info.dir, 'keda'),
    log,
  });
  namespace = await createNamespace(admin, 'autoscaling');
  await idleDeployment();
}, 180_000);

afterAll(async () => {
  await keda?.stop();
  if (namespace) await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
  await gate?.close();
  await bus?.stop();
});

describe("KEDA scales the handover on any partition's backlog", () => {
  it('watches every partition and holds the minimum while nothing is pending', async () => {
    const object = handoverScaledObject(gate.port);
    expect(object.spec.triggers.map((t) => t.metadata.consumer)).toEqual(
      Array.from({ length: PARTITIONS }, (_, p) => `${HANDOVER}-p${p}`),
    );
    await admin.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
      group: 'keda.sh',
      version: 'v1alpha1',
      plural: 'scaledobjects',
      namespace,
      body: { apiVersion: 'keda.sh/v1alpha1', kind: 'ScaledObject', ...object },
    });
    const metrics = await waitFor(
      'the HorizontalPodAutoscaler to read every partition',
      async () => {
        const read = await hpaMetrics().catch(() => new Map<string, string>());
        return read.size === PARTITIONS ? read : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 1_000 },
    );
    expect(new Set(metrics.values())).toEqual(new Set(['0']));
    expect(await deploymentReplicas()).toBe(object.spec.minReplicaCount);
  }, 150_000);

  it(`scales the Deployment on a backlog of partition ${LAST_PARTITION} alone`, async () => {
    const threshold = LAG_THRESHOLD;
    const pending = threshold * 6;
    for (const key of keysOnPartition(LAST_PARTITION, pending)) {
      await bus.js.publish(HANDOVER_WORK.workSubject(key, PARTITIONS), JSON.stringify({ key }));
    }
    // One replica per lagThreshold pending, reached in the HorizontalPodAutoscaler's steps (at most
    // double, or 4, per sync without a behavior): 2 → 4 → 6 for 30 pending on a threshold of 5.
    const wanted = Math.ceil(pending / threshold);
    const seen: number[] = [];
    await waitFor(
      `the handover Deployment scaled to ${wanted}`,
      async () => {
        const n = await deploymentReplicas();
        if (seen.at(-1) !== n) seen.push(n);
        return n >= wanted || undefined;
      },
      { timeoutMs: 120_000, intervalMs: 500 },
    );
    expect(seen[0]).toBe(2);
    expect(seen.at(-1)).toBe(wanted);
    expect([...seen].sort((a, b) => a - b)).toEqual(seen);
    const pendingOn = [...(await hpaMetrics())].filter(([, v]) => v !== '0').map(([name]) => name);
    expect(pendingOn).toEqual([expect.stringMatching(new RegExp(`^s${LAST_PARTITION}-`))]);
  }, 150_000);
});
