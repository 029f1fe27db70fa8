// The synthetic cluster bench/simulated-cluster.ts records on the bus: N targets of three
// versions with 50 leaves each (bench/fleet.ts) and an unpinned 10-rule config each, spread over
// a sharding pool of 20 instances, each with 2 replicas (a Deployment, an EndpointSlice with the
// two ready Pods, and the two served-set Leases reporting every target the instance is assigned).
// Objects carry what the apiserver adds (uid, resourceVersion, generation, creationTimestamp) and
// the statuses the handlers write in a settled cluster, so the records are the size of real ones.
//
// The pool's weights are 1…20, so the instances serve from 0.5% to 9.5% of the targets: the
// replica bench reads heap as a function of the targets served from three of them.
import {
  API_VERSION,
  IN_USE_FINALIZER,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVICE_NAME_LABEL,
  servedLeaseName,
  webhookServiceName,
} from '../src/api/constants.ts';
import { KINDS } from '../src/api/resources.ts';
import type { RecordedObject } from '../src/bus/messages.ts';
import { assignSubjects, type ConfigSubject, fleetOf, type InstanceLike } from '../src/core/assignment.ts';
import { encodeServedSet, expectedSetOf } from '../src/core/served-set-codec.ts';
import { servedLeaseBody } from '../src/webhook/lease-publisher.ts';
import { configSpec, target } from './fleet.ts';

export const OPERATOR_NAMESPACE = 'switchyard-system';
export const INSTANCES = 20;
export const REPLICAS_PER_INSTANCE = 2;
/** Long enough that every Lease stays live through a run at 50,000 targets. */
const LEASE_DURATION_SECONDS = 6 * 3600;

export function instanceName(i: number): string {
  return `shard-${String(i).padStart(2, '0')}`;
}

/** Pool weight of instance i: 1…20. */
export function instanceWeight(i: number): number {
  return i + 1;
}

export function targetName(i: number): string {
  return target(i).metadata.name;
}

export function configName(i: number): string {
  return `widgets${i}`;
}

export interface SimulatedObject {
  kind: string;
  object: RecordedObject;
}

let uidCounter = 0;
function apiserverMeta(name: string, namespace: string | undefined, createdAt: string) {
  uidCounter++;
  return {
    name,
    ...(namespace !== undefined && { namespace }),
    uid: `00000000-0000-4000-8000-${uidCounter.toString(16).padStart(12, '0')}`,
    resourceVersion: String(1000 + uidCounter),
    generation: 1,
    creationTimestamp: createdAt,
  };
}

function condition(type: string, reason: string, message: string, at: string) {
  return { type, status: 'True', observedGeneration: 1, lastTransitionTime: at, reason, message };
}

function instanceLike(i: number): InstanceLike {
  return {
    metadata: { name: instanceName(i) },
    spec: { sharding: { enabled: true, weight: instanceWeight(i) } },
  };
}

/** The targets each instance is assigned, by the project's resolver. */
export function assignmentsOf(n: number): Map<string, string[]> {
  const subjects: ConfigSubject[] = Array.from({ length: n }, (_, i) => ({
    config: `CRDConversionConfig/${configName(i)}`,
    target: targetName(i),
  }));
  const resolved = assignSubjects(
    subjects,
    fleetOf(Array.from({ length: INSTANCES }, (_, i) => instanceLike(i))),
  );
  const byInstance = new Map<string, string[]>(
    Array.from({ length: INSTANCES }, (_, i) => [instanceName(i), []]),
  );
  for (const [name, resolution] of resolved)
    if (resolution.ok) byInstance.get(resolution.instance)?.push(name);
  return byInstance;
}

/** A ConversionWebhookServer in the pool, as the apiserver holds it once rendered and reporting. */
export function instanceObject(
  name: string,
  weight: number,
  assigned: number,
  createdAt: string,
): RecordedObject {
  return {
    apiVersion: API_VERSION,
    kind: KINDS.webhookserver.kind,
    metadata: { ...apiserverMeta(name, undefined, createdAt), finalizers: [IN_USE_FINALIZER] },
    spec: { default: false, replicas: REPLICAS_PER_INSTANCE, sharding: { enabled: true, weight } },
    status: {
      observedGeneration: 1,
      replicas: REPLICAS_PER_INSTANCE,
      readyReplicas: REPLICAS_PER_INSTANCE,
      reportingReplicas: REPLICAS_PER_INSTANCE,
      servedTargetCount: assigned,
      assignedTargetCount: assigned,
      conditions: [
        condition('Ready', 'ReplicasReady', 'every replica is ready', createdAt),
        condition(
          'ServedTargetsKnown',
          'AllReporting',
          'every ready replica reports its served set',
          createdAt,
        ),
      ],
    },
  };
}

function crdObject(i: number, instance: string, caBundle: string, createdAt: string): RecordedObject {
  const crd = target(i);
  return {
    ...crd,
    metadata: apiserverMeta(crd.metadata.name, undefined, createdAt),
    spec: {
      ...crd.spec,
      conversion: {
        strategy: 'Webhook',
        webhook: {
          clientConfig: {
            service: {
              namespace: OPERATOR_NAMESPACE,
              name: webhookServiceName(instance),
              path: `/convert/${crd.metadata.name}`,
              port: 443,
            },
            caBundle,
          },
          conversionReviewVersions: ['v1'],
        },
      },
    },
    status: {
      acceptedNames: crd.spec.names,
      storedVersions: ['v3'],
      conditions: [
        {
          type: 'NamesAccepted',
          status: 'True',
          lastTransitionTime: createdAt,
          reason: 'NoConflicts',
          message: 'no conflicts found',
        },
        {
          type: 'Established',
          status: 'True',
          lastTransitionTime: createdAt,
          reason: 'InitialNamesAccepted',
          message: 'the initial names have been accepted',
        },
      ],
    },
  };
}

function configObject(i: number, instance: string, createdAt: string): RecordedObject {
  const name = targetName(i);
  return {
    apiVersion: API_VERSION,
    kind: KINDS.crdconfig.kind,
    metadata: apiserverMeta(configName(i), undefined, createdAt),
    spec: { targetCRD: { name }, ...configSpec(i) },
    status: {
      observedGeneration: 1,
      phase: 'Applied',
      assignedWebhookServer: instance,
      webhookPath: `/convert/${name}`,
      handoverDestination: instance,
      conditions: [
        condition('Validated', 'RulesCompile', 'every rule compiles against the target', createdAt),
        condition('Assigned', 'PoolMember', `resolved to ${instance} by weighted rendezvous`, createdAt),
        condition(
          'HandoverReady',
          'HandoverReady',
          `every ready replica of ${instance} reports ${name}`,
          createdAt,
        ),
      ],
    },
  };
}

function podName(instance: string, replica: number): string {
  return `${webhookServiceName(instance)}-7d9f8c6b5-r${replica}`;
}

function deploymentObject(instance: string, createdAt: string): RecordedObject {
  const name = webhookServiceName(instance);
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, 'switchyard.dev/webhook-server': instance };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { ...apiserverMeta(name, OPERATOR_NAMESPACE, createdAt), labels },
    spec: { replicas: REPLICAS_PER_INSTANCE, selector: { matchLabels: labels } },
    status: {
      observedGeneration: 1,
      replicas: REPLICAS_PER_INSTANCE,
      readyReplicas: REPLICAS_PER_INSTANCE,
      availableReplicas: REPLICAS_PER_INSTANCE,
      updatedReplicas: REPLICAS_PER_INSTANCE,
    },
  };
}

export function endpointSliceObject(instance: string, createdAt: string): RecordedObject {
  const service = webhookServiceName(instance);
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      ...apiserverMeta(`${service}-x7k2p`, OPERATOR_NAMESPACE, createdAt),
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [SERVICE_NAME_LABEL]: service },
    },
    addressType: 'IPv4',
    endpoints: Array.from({ length: REPLICAS_PER_INSTANCE }, (_, r) => ({
      addresses: [`10.0.${instance.length}.${r + 10}`],
      conditions: { ready: true, serving: true, terminating: false },
      targetRef: { kind: 'Pod', namespace: OPERATOR_NAMESPACE, name: podName(instance, r) },
    })),
    ports: [{ name: 'https', port: 8443, protocol: 'TCP' }],
  };
}

function leaseObject(
  instance: string,
  replica: number,
  served: readonly string[],
  nowMs: number,
  createdAt: string,
): RecordedObject {
  const pod = { name: podName(instance, replica), uid: `pod-${instance}-${replica}` };
  const lease = servedLeaseBody({
    namespace: OPERATOR_NAMESPACE,
    instance,
    pod,
    value: encodeServedSet(served, expectedSetOf(served)),
    leaseDurationSeconds: LEASE_DURATION_SECONDS,
    renewTimeMs: nowMs,
  });
  return {
    ...lease,
    metadata: {
      ...apiserverMeta(servedLeaseName(pod.name), OPERATOR_NAMESPACE, createdAt),
      ...lease.metadata,
    },
  };
}

/**
 * Every object of the cluster, in the order a first list would record them: instances and their
 * workloads, then targets and configs, then the replicas' Leases.
 */
export function* simulatedCluster(n: number, caBundle: string, nowMs: number): Generator<SimulatedObject> {
  const createdAt = new Date(nowMs - 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
  const assignments = assignmentsOf(n);
  const assignedTo = new Map<string, string>();
  for (const [instance, targets] of assignments) for (const t of targets) assignedTo.set(t, instance);
  for (let i = 0; i < INSTANCES; i++) {
    const name = instanceName(i);
    yield {
      kind: KINDS.webhookserver.viewKind,
      object: instanceObject(name, instanceWeight(i), assignments.get(name)?.length ?? 0, createdAt),
    };
    yield { kind: KINDS.deployment.viewKind, object: deploymentObject(name, createdAt) };
    yield { kind: KINDS.endpointslice.viewKind, object: endpointSliceObject(name, createdAt) };
  }
  for (let i = 0; i < n; i++) {
    const instance = assignedTo.get(targetName(i)) ?? instanceName(0);
    yield { kind: KINDS.crd.viewKind, object: crdObject(i, instance, caBundle, createdAt) };
    yield { kind: KINDS.crdconfig.viewKind, object: configObject(i, instance, createdAt) };
  }
  for (const [instance, served] of assignments)
    for (let r = 0; r < REPLICAS_PER_INSTANCE; r++)
      yield { kind: KINDS.lease.viewKind, object: leaseObject(instance, r, served, nowMs, createdAt) };
}
