// The randomized lifecycle test (issue 27): on Switchyard installed from deploy/, seeded random
// bursts of what users do to a fleet (create, delete, delete-and-recreate with the same name, pin,
// unpin, weight, enable and disable sharding, set the default, scale, on instances, configs and
// target CRDs), each burst followed by a quiet period, against the model of what must hold
// (src/scenario/lifecycle-model.ts; the steps from src/scenario/lifecycle-steps.ts).
//
//   every step     the apiserver's answer is the one the model predicts: admitted, or refused by
//                  the admission webhook for the reason the model gives; a deleted instance that
//                  nothing holds is gone (its finalizer released) before the next step
//   continuously   every version of every config the apiserver stored: a True HandoverReady is
//                  about the instance the status assigns, and the CRD named that instance's
//                  Service at that version (src/scenario/handover-claims.ts)
//   quiet periods  once settled (polled, bounded): every config's assignment and Assigned
//                  condition are the resolver's answer; every existing target's CRD names its
//                  assigned instance's Service with that instance's trust bundle, the status says
//                  so (HandoverReady True about it), and an object read at the served version
//                  converts through it; a target with no resolvable config names one of the
//                  instances it may; a missing target's config says TargetNotFound; every
//                  instance's status lists exactly the targets assigned to it, serves them, has
//                  its replicas ready; a deleted instance still held says DeletionBlocked
//
// One installed cluster for every seed; each seed's sequence starts from an empty fleet and ends
// by deleting everything. A failing seed prints its steps and the command that replays it.
//
// SWITCHYARD_LIFECYCLE_SEED=<n>[,<n>…] runs those seeds instead of the fixed list (`random` draws
// one); SWITCHYARD_LIFECYCLE_STEPS=<n> sets the random steps per seed (docs/reliability.md).
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  FORCE_DELETE_ANNOTATION,
  GROUP,
  servingCertSecretName,
  VERSION,
} from '../../src/api/constants.ts';
import { ASSIGNED_CONDITION } from '../../src/core/assign-decision.ts';
import { HANDOVER_READY } from '../../src/core/handover.ts';
import { DELETION_BLOCKED } from '../../src/core/instances/deletion.ts';
import { conversionServiceOf, liveConversionOf } from '../../src/core/target-conversion.ts';
import { HttpMethod } from '../../src/kube/request.ts';
import { SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
import { natsConnectOptions } from '../../src/local-cluster/nats-client.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import {
  type Answer,
  createTwoVersionTarget,
  renameConfig,
  request,
  SERVED_FIELD,
  STORED_FIELD,
} from '../../src/scenario/fleet.ts';
import {
  type ConfigVersion,
  type CrdVersion,
  type FalseClaim,
  falseClaims,
} from '../../src/scenario/handover-claims.ts';
import {
  assignedTargets,
  describeStep,
  destinations,
  type InstanceSpec,
  resolutions,
  serviceOf,
  type World,
} from '../../src/scenario/lifecycle-model.ts';
import {
  type Plan,
  type PlannedStep,
  planLifecycle,
  servedMoves,
  type Vocabulary,
} from '../../src/scenario/lifecycle-steps.ts';
import { seededRandom } from '../../src/scenario/seeded-random.ts';
import {
  deadLetterMark,
  deadLettersSince,
  describeDeadLetter,
  waitWorkDrained,
} from '../chaos/support/bus-outcomes.ts';
import { followVersions, type ObjectVersion, type VersionFollower } from '../support/object-versions.ts';
import { useInstalledCluster } from './support/installed-cluster.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'lifecycle' });
const TARGET_GROUP = 'lifecycle.switchyard.dev';
const OBJECTS_NAMESPACE = 'lifecycle';
const INSTANCES_PATH = `/apis/${GROUP}/${VERSION}/conversionwebhookservers`;
const CONFIGS_PATH = `/apis/${GROUP}/${VERSION}/crdconversionconfigs`;
const CRDS_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
/** A CRD no config converts: a write to it shows when the CRD history has caught up. */
const SENTINEL_CRD = `sentinels.${TARGET_GROUP}`;

const VOCABULARY: Vocabulary = {
  instances: ['lc-a', 'lc-b', 'lc-c', 'lc-d'],
  maxInstances: 3,
  configs: ['c1', 'c2', 'c3', 'c4', 'c5'],
  targets: [1, 2, 3, 4, 5].map((n) => `widget${n}s.${TARGET_GROUP}`),
  maxWeight: 4,
  maxReplicas: 2,
  maxBurst: 6,
};

/** CI's seeds: fixed, so a run is reproducible. */
const CI_SEEDS = [5, 7, 11];
const DEFAULT_STEPS = 45;
/** A quiet period ends once every check passes; this bounds it (a move waits for replicas to start and report). */
const SETTLE_TIMEOUT_MS = 180_000;
/** A deleted instance scales to zero and waits (bounded, 75 s) for its replicas to stop. */
const GONE_TIMEOUT_MS = 180_000;

const seeds = seedsToRun();
const stepsPerSeed = Number(process.env.SWITCHYARD_LIFECYCLE_STEPS ?? DEFAULT_STEPS);

const installed = useInstalledCluster('lifecycle', { instances: VOCABULARY.instances, log });
let admin: KubeConfig;
let nc: NatsConnection;
let jsm: JetStreamManager;
let configs: VersionFollower<StoredFields>;
let crds: VersionFollower<StoredFields>;
const figures: string[] = [];
/** False claims already reported (uid@revision): a later seed judges the whole history again. */
const reportedClaims = new Set<string>();

beforeAll(async () => {
  const { cluster } = await installed.start();
  admin = cluster.kubeConfigFor('admin');
  nc = await connect({ ...natsConnectOptions(cluster), name: 'lifecycle-checks' });
  jsm = await jetstreamManager(nc);
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: OBJECTS_NAMESPACE } } });
  await createTwoVersionTarget(admin, SENTINEL_CRD, 'Sentinel');
  // From now on: no config and no target exists yet, so every version of them is followed.
  const now = await listResourceVersion(CRDS_PATH);
  configs = await followVersions(admin, CONFIGS_PATH, now, () => true);
  crds = await followVersions(
    admin,
    CRDS_PATH,
    now,
    (name) => name === SENTINEL_CRD || VOCABULARY.targets.includes(name),
  );
}, 600_000);

afterAll(async () => {
  configs?.stop();
  crds?.stop();
  await nc?.close();
  for (const line of figures) process.stderr.write(`${line}\n`);
});

describe('randomized lifecycle: instances, configs and targets created, deleted, recreated, pinned and pooled', () => {
  for (const seed of seeds) {
    it(`seed ${seed}: every step answered as the model predicts, every quiet period as the model says`, async () => {
      const plan = planLifecycle(seededRandom(seed), stepsPerSeed, VOCABULARY);
      process.stderr.write(
        `[lifecycle] seed ${seed}: ${plan.randomSteps} random steps, ${plan.steps.length - plan.randomSteps} teardown steps\n`,
      );
      // A seed that failed may have left its fleet behind: the next one starts from an empty one.
      await clearFleet();
      const run = new SeedRun(seed, plan, await deadLetterMark(jsm), await listResourceVersion(CONFIGS_PATH));
      await run.all();
      figures.push(run.figure());
      // The continuous check had versions to judge: the watches followed the fleet.
      expect(run.versionsJudged).toBeGreaterThan(plan.steps.length);
    }, 1_800_000);
  }
});

/** One seed's sequence on the cluster, its checks, and what it prints when one fails. */
class SeedRun {
  private readonly seed: number;
  private readonly plan: Plan;
  private readonly probed = new Map<string, string>();
  private readonly startedAt = Date.now();
  private quiets = 0;
  private settleMs: number[] = [];
  private refusals = 0;
  versionsJudged = 0;

  /** DLQ's last sequence before the seed began: a dead letter after it is work given up on. */
  private readonly dlqMark: number;
  /** The revision the seed began at: the config versions after it are this seed's. */
  private readonly fromRevision: bigint;

  constructor(seed: number, plan: Plan, dlqMark: number, fromRevision: string) {
    this.seed = seed;
    this.plan = plan;
    this.dlqMark = dlqMark;
    this.fromRevision = BigInt(fromRevision);
  }

  async all(): Promise<void> {
    for (const planned of this.plan.steps) {
      try {
        await this.step(planned);
      } catch (err) {
        this.fail(planned, [(err as Error).message]);
      }
      if (planned.quiet) await this.quiet(planned, planned.quiet);
    }
  }

  figure(): string {
    const settle = [...this.settleMs].sort((a, b) => a - b);
    const median = settle[Math.floor(settle.length / 2)] ?? 0;
    const max = settle[settle.length - 1] ?? 0;
    return (
      `[lifecycle] seed ${this.seed}: ${this.plan.steps.length} steps (${this.refusals} refused as predicted, ` +
      `${servedMoves(this.plan)} moves of served targets between quiet periods), ` +
      `${this.quiets} quiet periods settled in median ${seconds(median)}, max ${seconds(max)}; ` +
      `${this.versionsJudged} config versions judged, 0 false claims; ` +
      `${seconds(Date.now() - this.startedAt)} in all`
    );
  }

  // -------------------------------------------------------------------------------------------
  // Steps

  private async step({ step, outcome }: PlannedStep): Promise<void> {
    switch (step.kind) {
      case 'createInstance':
        await this.createInstance(step.name, step.spec, outcome.admitted, outcome.refusal);
        break;
      case 'deleteInstance':
        await expectAnswer(
          `deleting instance ${step.name}`,
          await del(`${INSTANCES_PATH}/${step.name}`),
          200,
          202,
        );
        break;
      case 'recreateInstance':
        await expectAnswer(
          `deleting instance ${step.name}`,
          await del(`${INSTANCES_PATH}/${step.name}`),
          200,
          202,
        );
        await gone(`instance ${step.name}`, `${INSTANCES_PATH}/${step.name}`);
        await this.createInstance(step.name, step.spec, outcome.admitted, outcome.refusal);
        break;
      case 'patchInstance':
        this.expectAdmission(
          `patching instance ${step.name}`,
          await request(admin, HttpMethod.PATCH, `${INSTANCES_PATH}/${step.name}`, { spec: step.patch }),
          200,
          outcome.admitted,
          outcome.refusal,
        );
        break;
      case 'createConfig':
        this.expectAdmission(
          `creating config ${step.name}`,
          await request(admin, HttpMethod.POST, CONFIGS_PATH, renameConfig(step.name, step.target, step.pin)),
          201,
          outcome.admitted,
          outcome.refusal,
        );
        break;
      case 'deleteConfig':
        await expectAnswer(`deleting config ${step.name}`, await del(`${CONFIGS_PATH}/${step.name}`), 200);
        await gone(`config ${step.name}`, `${CONFIGS_PATH}/${step.name}`);
        break;
      case 'recreateConfig': {
        const answer = await request(admin, HttpMethod.GET, `${CONFIGS_PATH}/${step.name}`);
        const { spec } = (await expectAnswer(`reading config ${step.name}`, answer, 200)).body as {
          spec: { targetCRD: { name: string }; webhookServerRef?: { name: string } };
        };
        await expectAnswer(`deleting config ${step.name}`, await del(`${CONFIGS_PATH}/${step.name}`), 200);
        await gone(`config ${step.name}`, `${CONFIGS_PATH}/${step.name}`);
        const body = renameConfig(step.name, spec.targetCRD.name, spec.webhookServerRef?.name);
        await expectAnswer(
          `creating config ${step.name} again`,
          await request(admin, HttpMethod.POST, CONFIGS_PATH, body),
          201,
        );
        break;
      }
      case 'pin':
      case 'unpin':
        await expectAnswer(
          `${step.kind === 'pin' ? 'pinning' : 'unpinning'} config ${step.name}`,
          await request(admin, HttpMethod.PATCH, `${CONFIGS_PATH}/${step.name}`, {
            spec: { webhookServerRef: step.kind === 'pin' ? { name: step.instance } : null },
          }),
          200,
        );
        break;
      case 'createTarget':
        await createTwoVersionTarget(admin, step.name, kindOf(step.name));
        break;
      case 'deleteTarget':
        await this.deleteTarget(step.name);
        break;
      case 'recreateTarget':
        await this.deleteTarget(step.name);
        await createTwoVersionTarget(admin, step.name, kindOf(step.name));
        break;
    }
    // Nothing holds these any more: each goes once the moves away from it land.
    for (const instance of outcome.goes) await gone(`instance ${instance}`, `${INSTANCES_PATH}/${instance}`);
  }

  /** Admitted: created, and taken in by the instances handler (its finalizer) before the next step. */
  private async createInstance(name: string, spec: InstanceSpec, admitted: boolean, refusal?: string) {
    const body = { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', metadata: { name }, spec };
    const answer = await request(admin, HttpMethod.POST, INSTANCES_PATH, body);
    this.expectAdmission(`creating instance ${name}`, answer, 201, admitted, refusal);
    if (!admitted) return;
    // Until then a delete is not held by anything; the model says when it must be.
    await waitFor(
      `instance ${name} to carry its finalizer`,
      async () => {
        const read = await request(admin, HttpMethod.GET, `${INSTANCES_PATH}/${name}`);
        const finalizers = (read.body as { metadata?: { finalizers?: string[] } }).metadata?.finalizers;
        return finalizers && finalizers.length > 0 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
  }

  private async deleteTarget(name: string): Promise<void> {
    await expectAnswer(`deleting CRD ${name}`, await del(`${CRDS_PATH}/${name}`), 200);
    await gone(`CRD ${name}`, `${CRDS_PATH}/${name}`);
  }

  private expectAdmission(what: string, answer: Answer, ok: number, admitted: boolean, refusal?: string) {
    if (admitted) {
      if (answer.status !== ok)
        throw new Error(
          `${what}: the model admits it, the apiserver answered ${answer.status} ${answer.message}`,
        );
      return;
    }
    this.refusals++;
    const denied = answer.status >= 400 && answer.message.includes('denied the request');
    if (!denied || (refusal !== undefined && !answer.message.includes(refusal)))
      throw new Error(
        `${what}: the model predicts the refusal "${refusal}", the apiserver answered ${answer.status} ${answer.message}`,
      );
  }

  // -------------------------------------------------------------------------------------------
  // Quiet periods

  private async quiet(planned: PlannedStep, world: World): Promise<void> {
    const started = Date.now();
    // Quiet: every work item the burst caused has been handled (a waiting re-check is not work).
    const work = await waitWorkDrained(jsm, SETTLE_TIMEOUT_MS);
    if (!work.drained)
      this.fail(planned, [
        `work left on the bus after ${SETTLE_TIMEOUT_MS / 1000} s: ${work.left.work} on WORK ${JSON.stringify(work.left.workSubjects)}, ${work.left.fanout} on FANOUT`,
      ]);
    let problems: string[] = [];
    try {
      await waitFor(
        `the fleet to settle after step ${planned.index}`,
        async () => {
          problems = await this.quietProblems(world);
          return problems.length === 0 ? true : undefined;
        },
        { timeoutMs: SETTLE_TIMEOUT_MS, intervalMs: 1_000 },
      );
    } catch {
      this.fail(planned, [`not settled within ${SETTLE_TIMEOUT_MS / 1000} s:`, ...problems]);
    }
    this.quiets++;
    this.settleMs.push(Date.now() - started);
    const deadLetters = await deadLettersSince(jsm, this.dlqMark);
    if (deadLetters.length > 0)
      this.fail(planned, ['work given up on (dead letters):', ...deadLetters.map(describeDeadLetter)]);
    const claims = await this.judgeClaims();
    if (claims.length > 0)
      this.fail(planned, [
        'the status claimed a verified move its CRD did not reflect:',
        ...claims.map((c) => `config ${c.config} (uid ${c.uid}) at revision ${c.revision}: ${c.what}`),
      ]);
  }

  /** Everything a settled fleet must show that it does not; empty once it does. */
  private async quietProblems(world: World): Promise<string[]> {
    const problems: string[] = [];
    const [instanceList, configList, crdList] = await Promise.all([
      listItems(INSTANCES_PATH),
      listItems(CONFIGS_PATH),
      listItems(CRDS_PATH),
    ]);
    const liveInstances = new Map(instanceList.map((i) => [i.metadata.name, i]));
    const liveConfigs = new Map(configList.map((c) => [c.metadata.name, c]));
    const liveCrds = new Map(
      crdList.filter((c) => VOCABULARY.targets.includes(c.metadata.name)).map((c) => [c.metadata.name, c]),
    );
    sameNames('instances', [...world.instances.keys()], [...liveInstances.keys()], problems);
    sameNames('configs', [...world.configs.keys()], [...liveConfigs.keys()], problems);
    sameNames('target CRDs', [...world.targets.keys()], [...liveCrds.keys()], problems);

    const resolved = resolutions(world);
    for (const config of world.configs.values()) {
      const live = liveConfigs.get(config.name);
      if (!live) continue;
      const status = (live.status ?? {}) as LiveConfigStatus;
      const r = resolved.get(config.target);
      const assigned = condition(status, ASSIGNED_CONDITION);
      const ready = condition(status, HANDOVER_READY);
      const says = `config ${config.name} (${config.target}): assigned ${status.assignedWebhookServer}, Assigned ${assigned?.status}/${assigned?.reason}, HandoverReady ${ready?.status}/${ready?.reason} about ${status.handoverDestination}`;
      if (!r) continue;
      if (!r.ok) {
        if (assigned?.status !== 'False' || assigned.reason !== r.reason)
          problems.push(`${says}; the resolver says ${r.reason}`);
        continue;
      }
      if (
        status.assignedWebhookServer !== r.instance ||
        assigned?.status !== 'True' ||
        assigned.reason !== r.decidedBy
      )
        problems.push(`${says}; the resolver says ${r.instance} (${r.decidedBy})`);
      const crd = liveCrds.get(config.target);
      if (!crd) {
        if (ready?.status !== 'False' || ready.reason !== 'TargetNotFound')
          problems.push(`${says}; its target does not exist: expected HandoverReady False/TargetNotFound`);
        continue;
      }
      if (ready?.status !== 'True' || status.handoverDestination !== r.instance)
        problems.push(`${says}; expected HandoverReady True about ${r.instance}`);
      problems.push(...(await this.servedBy(config.target, crd, r.instance)));
    }

    const heading = destinations(world);
    for (const target of world.targets.values()) {
      const crd = liveCrds.get(target.name);
      if (!crd || heading.has(target.name)) continue;
      const named = namedInstance(crd);
      if (named === 'foreign' || !target.mayName.has(named))
        problems.push(
          `CRD ${target.name} (no resolvable config) names ${describeNamed(named)}; it may only name ${[...target.mayName].map(describeNamed).join(' or ')}`,
        );
    }

    const expectedTargets = assignedTargets(world);
    for (const instance of world.instances.values()) {
      const live = liveInstances.get(instance.name);
      if (!live) continue;
      const status = (live.status ?? {}) as LiveInstanceStatus;
      const expected = expectedTargets.get(instance.name) ?? [];
      const listed = status.assignedTargets ?? [];
      if (listed.join(',') !== expected.join(',') || status.assignedTargetCount !== expected.length)
        problems.push(
          `instance ${instance.name}: status lists ${status.assignedTargetCount} assigned targets [${listed.join(', ')}], expected ${expected.length} [${expected.join(', ')}]`,
        );
      const deleting = (live.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined;
      if (deleting !== instance.terminating)
        problems.push(
          `instance ${instance.name}: ${deleting ? 'deleting' : 'not deleted'}, the model says otherwise`,
        );
      if (instance.terminating) {
        const blocked = condition(status, DELETION_BLOCKED);
        if (blocked?.status !== 'True')
          problems.push(
            `instance ${instance.name}: deleted and held, but DeletionBlocked is ${blocked?.status}/${blocked?.reason}`,
          );
        continue;
      }
      if (status.readyReplicas !== instance.spec.replicas)
        problems.push(
          `instance ${instance.name}: ${status.readyReplicas} ready replicas, spec says ${instance.spec.replicas}`,
        );
      const mustServe = expected.filter((t) => world.targets.has(t));
      const served = new Set(status.servedTargets ?? []);
      const missing = mustServe.filter((t) => !served.has(t));
      if (status.servedTargets === undefined || missing.length > 0)
        problems.push(
          `instance ${instance.name}: serves [${status.servedTargets?.join(', ') ?? 'cannot tell'}], must serve [${mustServe.join(', ')}]`,
        );
    }
    return problems;
  }

  /** The CRD names the instance's Service with its trust bundle, and an object converts through it. */
  private async servedBy(target: string, crd: StoredObject, instance: string): Promise<string[]> {
    const conversion = liveConversionOf(crd);
    const service = conversion?.webhook?.clientConfig?.service;
    if (service?.name !== serviceOf(instance) || service.namespace !== SWITCHYARD_NAMESPACE)
      return [
        `CRD ${target} names Service ${service?.namespace}/${service?.name}, expected ${SWITCHYARD_NAMESPACE}/${serviceOf(instance)}`,
      ];
    const secret = await request(
      admin,
      HttpMethod.GET,
      `/api/v1/namespaces/${SWITCHYARD_NAMESPACE}/secrets/${servingCertSecretName(instance)}`,
    );
    const bundle = (secret.body as { data?: Record<string, string> }).data?.['ca.crt'];
    if (bundle === undefined || conversion?.webhook?.clientConfig?.caBundle !== bundle)
      return [
        `CRD ${target} names ${instance}'s Service with a caBundle that is not its serving Secret's ca.crt`,
      ];
    return this.probe(target, crd);
  }

  /** An object of this CRD incarnation, stored at v1, read at v2: the read converts through the webhook. */
  private async probe(target: string, crd: StoredObject): Promise<string[]> {
    const [plural] = target.split('.');
    const collection = (version: string) =>
      `/apis/${TARGET_GROUP}/${version}/namespaces/${OBJECTS_NAMESPACE}/${plural}`;
    const value = `size-of-${crd.metadata.uid}`;
    if (this.probed.get(target) !== crd.metadata.uid) {
      const created = await request(admin, HttpMethod.POST, collection('v1'), {
        apiVersion: `${TARGET_GROUP}/v1`,
        kind: kindOf(target),
        metadata: { name: 'probe' },
        spec: { [STORED_FIELD]: value },
      });
      if (created.status !== 201 && created.status !== 409)
        return [`creating a ${target} object: ${created.status} ${created.message}`];
      this.probed.set(target, crd.metadata.uid);
    }
    const read = await request(admin, HttpMethod.GET, `${collection('v2')}/probe`);
    const got = (read.body as { spec?: Record<string, string> }).spec?.[SERVED_FIELD];
    if (read.status !== 200 || got !== value)
      return [
        `reading a ${target} object at v2 (converted by the webhook): ${read.status} ${read.message || `spec.${SERVED_FIELD}=${got}`}`,
      ];
    return [];
  }

  /** Every config version stored up to now, judged against the CRDs as they were. */
  private async judgeClaims(): Promise<FalseClaim[]> {
    // A write to a CRD no one converts: once the CRD history holds it, it holds every CRD version before it.
    const tick = await request(admin, HttpMethod.PATCH, `${CRDS_PATH}/${SENTINEL_CRD}`, {
      metadata: { annotations: { [`${TARGET_GROUP}/tick`]: String(Date.now()) } },
    });
    const upTo = Number((tick.body as StoredObject).metadata.resourceVersion);
    await waitFor(`the CRD versions up to revision ${upTo}`, () =>
      crds.versions.some((v) => v.rv >= upTo) ? true : undefined,
    );
    for (const follower of [configs, crds]) if (follower.broken) throw new Error(follower.broken);
    const configVersions = configs.versions.filter((v) => v.rv <= upTo).map(configVersionOf);
    this.versionsJudged = configVersions.filter((v) => v.revision > this.fromRevision).length;
    const crdVersions = crds.versions
      .filter((v) => v.object.metadata.name !== SENTINEL_CRD)
      .map(crdVersionOf);
    const claims = falseClaims(configVersions, crdVersions, (instance) => ({
      name: serviceOf(instance),
      namespace: SWITCHYARD_NAMESPACE,
    }));
    const fresh = claims.filter((c) => !reportedClaims.has(`${c.uid}@${c.revision}`));
    for (const c of fresh) reportedClaims.add(`${c.uid}@${c.revision}`);
    return fresh;
  }

  private fail(at: PlannedStep, problems: string[]): never {
    const steps = this.plan.steps.map(
      (s) =>
        `  ${s.index === at.index ? '>' : ' '}${String(s.index).padStart(3)} ${describeStep(s.step)}` +
        `${s.outcome.admitted ? '' : ' (refused)'}${s.outcome.goes.length > 0 ? ` [then gone: ${s.outcome.goes.join(', ')}]` : ''}` +
        `${s.quiet ? ' -- quiet' : ''}`,
    );
    const message = [
      `[lifecycle] seed ${this.seed} failed at step ${at.index}${at.quiet ? ' (its quiet period)' : ''}: ${describeStep(at.step)}`,
      ...problems.map((p) => `  ${p}`),
      'the steps:',
      ...steps,
      `replay: SWITCHYARD_LIFECYCLE_SEED=${this.seed} SWITCHYARD_LIFECYCLE_STEPS=${stepsPerSeed} npx vitest run --project integration test/e2e/lifecycle.e2e.ts`,
    ].join('\n');
    process.stderr.write(`${message}\n`);
    throw new Error(message);
  }
}

// ---------------------------------------------------------------------------------------------
// Reading the cluster

interface LiveCondition {
  type: string;
  status: string;
  reason: string;
  message?: string;
  lastTransitionTime?: string;
}

interface LiveConfigStatus {
  assignedWebhookServer?: string;
  handoverDestination?: string;
  conditions?: LiveCondition[];
}

interface LiveInstanceStatus {
  readyReplicas?: number;
  assignedTargets?: string[];
  assignedTargetCount?: number;
  servedTargets?: string[];
  conditions?: LiveCondition[];
}

function condition(status: { conditions?: LiveCondition[] }, type: string): LiveCondition | undefined {
  return status.conditions?.find((c) => c.type === type);
}

/** Fields of a stored object read loosely (spec, status): the checks say what they expect of them. */
interface StoredFields {
  [field: string]: unknown;
}

type StoredObject = ObjectVersion<StoredFields>['object'];

function configVersionOf(v: ObjectVersion<StoredFields>): ConfigVersion {
  const spec = v.object.spec as { targetCRD?: { name: string } } | undefined;
  const status = (v.object.status ?? {}) as LiveConfigStatus;
  const ready = condition(status, HANDOVER_READY);
  return {
    revision: BigInt(v.rv),
    deleted: v.type === 'DELETED',
    name: v.object.metadata.name,
    uid: v.object.metadata.uid,
    target: spec?.targetCRD?.name ?? '',
    assigned: status.assignedWebhookServer,
    destination: status.handoverDestination,
    condition: ready && {
      status: ready.status,
      reason: ready.reason,
      message: ready.message ?? '',
      lastTransitionTime: ready.lastTransitionTime,
    },
  };
}

function crdVersionOf(v: ObjectVersion<StoredFields>): CrdVersion {
  const service = liveConversionOf(v.object)?.webhook?.clientConfig?.service;
  return {
    revision: BigInt(v.rv),
    deleted: v.type === 'DELETED',
    name: v.object.metadata.name,
    uid: v.object.metadata.uid,
    service: service?.name === undefined ? undefined : { name: service.name, namespace: service.namespace },
  };
}

/** The instance (of the vocabulary) whose Service the CRD names, undefined for none, 'foreign' for another. */
function namedInstance(crd: StoredObject): string | undefined | 'foreign' {
  const service = conversionServiceOf(crd);
  if (service === undefined) return undefined;
  return VOCABULARY.instances.find((i) => serviceOf(i) === service) ?? 'foreign';
}

function describeNamed(named: string | undefined): string {
  return named === undefined ? 'no Service' : `${named}'s Service`;
}

function sameNames(what: string, expected: string[], live: string[], problems: string[]): void {
  const e = [...expected].sort().join(', ');
  const l = [...live].sort().join(', ');
  if (e !== l) problems.push(`${what}: the cluster has [${l}], the model [${e}]`);
}

/** Every config, target and instance deleted (an instance still in use deleted anyway), and gone. */
async function clearFleet(): Promise<void> {
  const names = async (path: string) => (await listItems(path)).map((o) => o.metadata.name);
  for (const name of await names(CONFIGS_PATH)) await del(`${CONFIGS_PATH}/${name}`);
  for (const name of (await names(CRDS_PATH)).filter((n) => VOCABULARY.targets.includes(n)))
    await del(`${CRDS_PATH}/${name}`);
  for (const name of await names(INSTANCES_PATH)) {
    await request(admin, HttpMethod.PATCH, `${INSTANCES_PATH}/${name}`, {
      metadata: { annotations: { [FORCE_DELETE_ANNOTATION]: 'true' } },
    });
    await del(`${INSTANCES_PATH}/${name}`);
  }
  await waitFor(
    'the fleet of an earlier seed to be gone',
    async () => {
      const left = [
        ...(await names(CONFIGS_PATH)),
        ...(await names(INSTANCES_PATH)),
        ...(await names(CRDS_PATH)).filter((n) => VOCABULARY.targets.includes(n)),
      ];
      return left.length === 0 ? true : undefined;
    },
    { timeoutMs: GONE_TIMEOUT_MS, intervalMs: 500 },
  );
}

async function listResourceVersion(path: string): Promise<string> {
  const answer = await expectAnswer(`listing ${path}`, await request(admin, HttpMethod.GET, path), 200);
  return (answer.body as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
}

async function listItems(path: string): Promise<StoredObject[]> {
  const answer = await expectAnswer(`listing ${path}`, await request(admin, HttpMethod.GET, path), 200);
  return (answer.body as { items?: StoredObject[] }).items ?? [];
}

function del(path: string): Promise<Answer> {
  return request(admin, HttpMethod.DELETE, path);
}

async function expectAnswer(what: string, answer: Answer, ...ok: number[]): Promise<Answer> {
  if (!ok.includes(answer.status)) throw new Error(`${what}: HTTP ${answer.status} ${answer.message}`);
  return answer;
}

async function gone(what: string, path: string): Promise<void> {
  await waitFor(
    `${what} to be gone`,
    async () => ((await request(admin, HttpMethod.GET, path)).status === 404 ? true : undefined),
    { timeoutMs: GONE_TIMEOUT_MS, intervalMs: 250 },
  );
}

/** `widget3s.lifecycle.switchyard.dev` → `Widget3` (the singular createTwoVersionTarget gives it). */
function kindOf(target: string): string {
  const singular = (target.split('.')[0] ?? '').replace(/s$/, '');
  return singular.charAt(0).toUpperCase() + singular.slice(1);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function seedsToRun(): number[] {
  const given = process.env.SWITCHYARD_LIFECYCLE_SEED;
  if (given === undefined || given === '') return CI_SEEDS;
  return given.split(',').map((s) => {
    if (s.trim() === 'random') return Math.floor(Math.random() * 2 ** 31);
    const seed = Number(s);
    if (!Number.isInteger(seed) || seed < 0)
      throw new Error(
        `SWITCHYARD_LIFECYCLE_SEED=${given}: expected integers ≥ 0 or "random", comma-separated`,
      );
    return seed;
  });
}
