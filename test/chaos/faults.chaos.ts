// The move survives faults (issue 27): Switchyard installed from deploy/ (as the move e2e is),
// two instances of two webhook-server replicas, one target moved back and forth by every kind of
// move (pin, unpin, joining and leaving the pool, weight) under a load that reads and writes it
// at its non-storage version for the whole run, and one fault per case injected while its move is
// under way: every worker kind SIGKILLed and force-deleted alone and all together, a source and a
// destination replica killed, nats-server killed and restarted and frozen and resumed, a
// destination replica wedged until its Lease goes stale, kube-apiserver restarted. Every case
// must end with no failed request, no wrong value, no conversion the apiserver counted as failed,
// a verified handover, every work item at a terminal outcome and no duplicate side effect
// (support/chaos-case.ts). The one exception is a source replica killed while the target names
// its instance: the apiserver fails the calls that reach it until its endpoint is withdrawn,
// whatever Switchyard does, so that case holds every failure to what the kill explains
// (support/killed-replica.ts). A negative control runs the same checker over replicas that drop
// a plan on reassignment (a test-only setting) and asserts that it sees the failures, and that
// the kill's account would not explain them.
//
// One installed cluster for every case, the cases one after the other, the load steady: the file
// takes 8 to 10 minutes on two cores. SWITCHYARD_CHAOS_SEED replays a run's choices
// (printed at the start); SWITCHYARD_CHAOS_ROUNDS=<n> runs the whole list of faults n times, a soak
// (docs/reliability.md).
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, WEBHOOK_SERVER_LABEL, webhookServiceName } from '../../src/api/constants.ts';
import { HttpMethod } from '../../src/kube/request.ts';
import type { LocalCluster } from '../../src/local-cluster/cluster.ts';
import { SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
import { natsConnectOptions } from '../../src/local-cluster/nats-client.ts';
import { killPods, type PodRef, podsMatching, signalPods } from '../../src/local-cluster/pod-faults.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import { ConversionLoad } from '../../src/scenario/conversion-load.ts';
import {
  allowExtraArgKeys,
  configStatus,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  handoverReady,
  patchConfig,
  request,
} from '../../src/scenario/fleet.ts';
import { killedReplicaFailure } from '../../src/scenario/killed-replica-failures.ts';
import { useInstalledCluster } from '../e2e/support/installed-cluster.ts';
import {
  type CaseResult,
  type CaseTiming,
  type Fault,
  type FaultContext,
  failureKinds,
  figureLine,
  runCase,
  type Subject,
  sleep,
  violations,
} from './support/chaos-case.ts';
import {
  CHAOS_LOAD,
  loadedSubject,
  loadTarget,
  pick as pickFrom,
  pickTarget,
  WORKER_KINDS,
  waitHealthy,
} from './support/fleet.ts';
import { serviceEndpoints } from './support/killed-replica.ts';
import { type Move, MoveCycle } from './support/moves.ts';
import { chaosSeed, seededRandom } from './support/seeded.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'chaos' });
const A = 'chaos-a';
const B = 'chaos-b';
const NC_A = 'chaos-nc-a';
const NC_B = 'chaos-nc-b';
const GROUP = 'chaos.switchyard.dev';
const NC_TARGET = `gadgets.${GROUP}`;
const NC_CONFIG = 'chaos-gadgets';
const CONFIG = 'chaos-target';
const OBJECTS_NAMESPACE = 'chaos-load';
/** Longer than the bus clients' idle heartbeats (2.5 s, src/bus/follow-latest.ts) several times over. */
const NATS_FREEZE_MS = 12_000;
/** A served-set Lease goes stale one lease duration (90 s) after its last renewal (30 s period). */
const LEASE_STALE_TIMEOUT_MS = 150_000;
/**
 * A work item in flight on a killed worker comes back after its consumer's ack_wait (60 s for
 * instances, 30 s for the others), once a replacement Pod is up: the drain bound is above both.
 */
const TIMING: CaseTiming = { moveTimeoutMs: 180_000, settleMs: 5_000, drainTimeoutMs: 150_000 };
const CASE_TIMEOUT_MS = 600_000;
const ROUNDS = Number(process.env.SWITCHYARD_CHAOS_ROUNDS ?? '1');

const seed = chaosSeed();
const random = seededRandom(seed);
/** The first plural whose target B (outside the pool at weight 1) loses to A and wins at some weight. */
const { target: TARGET, weights: WEIGHTS } = pickTarget(GROUP, A, B);

const chaos = useInstalledCluster('chaos', { instances: [A, B, NC_A, NC_B], log });
let admin: KubeConfig;
let cluster: LocalCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let load: ConversionLoad;
let subject: Subject;
let cycle: MoveCycle;
const results: CaseResult[] = [];

beforeAll(async () => {
  process.stderr.write(`[chaos] seed ${seed} (SWITCHYARD_CHAOS_SEED=${seed} replays this run's choices)\n`);
  const installed = await chaos.start();
  ({ admin, cluster } = installed);
  nc = await connect({ ...natsConnectOptions(cluster), name: 'chaos-checks', maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: OBJECTS_NAMESPACE } } });

  await createInstance(admin, A, { default: true, replicas: 2, sharding: { enabled: true, weight: 1 } });
  await createInstance(admin, B, { replicas: 2 });
  await createTwoVersionTarget(admin, TARGET, 'Widget');
  await createRenameConfig(admin, CONFIG, TARGET);
  subject = await loadedSubject({
    installed,
    jsm,
    run: 'chaos',
    config: CONFIG,
    target: TARGET,
    namespace: OBJECTS_NAMESPACE,
    instances: [A, B],
  });
  load = subject.load;
  cycle = new MoveCycle({ kc: admin, config: CONFIG, a: A, b: B, weights: WEIGHTS });
  await waitHealthy(admin, [A, B]);
  await sleep(TIMING.settleMs);
}, 900_000);

afterAll(async () => {
  await nc?.close();
});

// ---------------------------------------------------------------------------------------------
// The faults

/** SIGKILL every process of the worker kinds' Pods and force-delete the Pods: a node lost with them. */
function killWorkers(kinds: readonly string[]): Fault {
  return {
    name:
      kinds.length === 1
        ? `SIGKILL ${kinds[0]} (every Pod, force-deleted)`
        : 'SIGKILL every worker kind at once',
    delay: 'drawn',
    async inject(ctx) {
      const selector = `app.kubernetes.io/part-of=switchyard,app.kubernetes.io/component in (${kinds.join(',')})`;
      const pods = await podsMatching(admin, SWITCHYARD_NAMESPACE, selector);
      const pids = await killPods(cluster.nodeAgent, admin, pods);
      ctx.note(`${pods.length} Pods force-deleted, ${pids.length} processes killed`);
    },
  };
}

/**
 * One replica of the move's source, SIGKILLed and force-deleted at a drawn time: anywhere from
 * serving every conversion before the repoint to the old storage's last calls after it. The
 * apiserver goes on sending conversions to its endpoint until the EndpointSlice withdraws it, and
 * never retries one that failed in transit, so the case cannot claim 0 failures. It claims the
 * strongest thing that holds (support/killed-replica.ts): every failed request of the window is
 * a transport failure of a call to the killed Pod (its endpoint address in the message: `dial
 * tcp 127.0.0.1:<port>`, or a connection to its Service cut mid-call while no other replica of
 * it died), between the kill and 5 s after its endpoint was withdrawn; the apiserver counted no
 * failed conversion outside that span (its counter sampled every 250 ms); nothing else fails —
 * no "holds no conversion plan", no 4xx, no wrong value — and the move converges verified, its
 * work drains, no dead letter, one repoint.
 */
function sourceReplicaKilled(): Fault {
  return {
    name: 'SIGKILL a source replica (force-deleted)',
    delay: 'drawn',
    async inject(ctx) {
      const instance = ctx.move.from;
      const all = await replicas(instance);
      const pod = pick(all);
      const others = all.filter((p) => p.name !== pod.name);
      const othersBefore = processesOf(others);
      let pids: number[] = [];
      await ctx.killOnDataPath(
        pod,
        instance,
        async () => {
          pids = await killPods(cluster.nodeAgent, admin, [pod]);
        },
        () => processesOf(others) === othersBefore,
      );
      ctx.note(`${pod.name} killed (${pids.length} processes)`);
    },
  };
}

/**
 * One replica of the move's destination, SIGKILLed and force-deleted while the move waits: the
 * gate has counted it among the ready Pods that serve the target and is confirming them
 * (handover.confirmSeconds). The confirmation must start over without it, and the repoint come
 * with no failure at all.
 */
function destinationReplicaKilled(): Fault {
  return {
    name: 'SIGKILL a destination replica (force-deleted) while the gate confirms it',
    delay: 'confirming',
    async inject(ctx) {
      const pod = pick(await replicas(ctx.move.to));
      const pids = await killPods(cluster.nodeAgent, admin, [pod]);
      ctx.victims([pod.name]);
      ctx.note(`${pod.name} killed (${pids.length} processes)`);
    },
  };
}

const natsKilled: Fault = {
  name: 'SIGKILL nats-server, start it again (same port, config, store)',
  delay: 'drawn',
  async inject(ctx) {
    const started = Date.now();
    await cluster.nats.stop({ kill: true });
    await cluster.nats.launch();
    ctx.note(`nats-server back with JetStream after ${((Date.now() - started) / 1000).toFixed(1)} s`);
  },
};

const natsFrozen: Fault = {
  name: `SIGSTOP nats-server for ${NATS_FREEZE_MS / 1000} s, then SIGCONT`,
  delay: 'drawn',
  async inject(ctx) {
    cluster.nats.freeze();
    try {
      await sleep(NATS_FREEZE_MS);
    } finally {
      cluster.nats.thaw();
    }
    ctx.note(`frozen ${NATS_FREEZE_MS / 1000} s`);
  },
};

/**
 * A destination replica stopped (SIGSTOP) while the move waits: the gate has counted it among
 * the ready Pods that serve the target and is confirming them. It answers nothing from then on,
 * while its Lease stays live for 90 s: the move must go on without it (its readiness probe fails
 * within the confirmation, which starts over without it) and fail nothing, its Lease must go
 * stale and stop counting, and after SIGCONT it comes back and reports again.
 */
function wedgedReplica(): Fault {
  let wedged: PodRef | undefined;
  let instance = '';
  return {
    name: 'a destination replica wedged (SIGSTOP) while the gate confirms it, until its Lease is stale, then SIGCONT',
    delay: 'confirming',
    async inject(ctx) {
      instance = ctx.move.to;
      wedged = pick(await replicas(instance));
      signalPods(cluster.nodeAgent, [wedged], 'SIGSTOP');
      ctx.victims([wedged.name]);
      ctx.note(`${wedged.name} stopped`);
    },
    async afterConverged(ctx) {
      if (!wedged) return;
      const stopped = Date.now();
      try {
        const stale = await waitFor(
          `${wedged.name}'s Lease to go stale`,
          async () => ((await reportingReplicas(instance)) === 1 ? Date.now() : undefined),
          { timeoutMs: LEASE_STALE_TIMEOUT_MS, intervalMs: 1_000 },
        ).catch(() => undefined);
        if (stale === undefined)
          ctx.fail(
            `${wedged.name} stayed counted as reporting for ${LEASE_STALE_TIMEOUT_MS / 1000} s while wedged — ` +
              'a replica that answers nothing would still vouch for targets at the gate',
          );
        else
          ctx.note(
            `its Lease stopped counting ${((stale - stopped) / 1000).toFixed(0)} s after the move converged`,
          );
      } finally {
        signalPods(cluster.nodeAgent, [wedged], 'SIGCONT');
      }
      const back = await waitFor(
        `${wedged.name} to report again`,
        async () => ((await reportingReplicas(instance)) === 2 ? Date.now() : undefined),
        { timeoutMs: 120_000, intervalMs: 1_000 },
      ).catch(() => undefined);
      if (back === undefined)
        ctx.fail(
          `${wedged.name} never reported again after SIGCONT — a recovered replica stays out of every gate`,
        );
      else ctx.note(`reporting again ${((back - stopped) / 1000).toFixed(0)} s after the move converged`);
    },
  };
}

const apiserverRestarted: Fault = {
  name: 'kube-apiserver SIGKILLed and started again (same port, flags, etcd)',
  delay: 'drawn',
  async inject(ctx: FaultContext) {
    await ctx.apiserverGoingDown();
    const { stoppedAtMs, readyAtMs } = await cluster.restartApiServer({ signal: 'SIGKILL' });
    ctx.apiserverBack();
    ctx.note(`apiserver down ${((readyAtMs - stoppedAtMs) / 1000).toFixed(1)} s (until /readyz)`);
  },
};

const FAULTS: Fault[] = [
  ...WORKER_KINDS.map((kind) => killWorkers([kind])),
  killWorkers(WORKER_KINDS),
  sourceReplicaKilled(),
  destinationReplicaKilled(),
  natsKilled,
  natsFrozen,
  wedgedReplica(),
  apiserverRestarted,
];

// ---------------------------------------------------------------------------------------------
// The cases

describe('a move under load survives each fault injected while it is under way', () => {
  for (let round = 1; round <= ROUNDS; round++) {
    for (const fault of FAULTS) {
      const name = ROUNDS > 1 ? `round ${round}: ${fault.name}` : fault.name;
      it(
        name,
        async () => {
          const waited = await waitHealthy(admin, [A, B]);
          const move = cycle.next();
          const result = await runCase(subject, move, fault, random, TIMING);
          results.push(result);
          console.log(
            figureLine(result) +
              (waited > 1_000 ? ` | waited ${(waited / 1000).toFixed(0)} s for a healthy start` : ''),
          );
          expect(violations(result), 'what went wrong, and what it means in production').toEqual([]);
        },
        CASE_TIMEOUT_MS,
      );
    }
  }

  it('over the whole run: no request failed outside the excluded windows, no value was wrong, the watch ended on every last value', async () => {
    const summary = await load.stop();
    const inWindows = results.reduce((n, r) => n + r.failures.length, 0);
    const excluded = results.reduce((n, r) => n + r.excludedFailures, 0);
    const outside = summary.failures.length - inWindows - excluded;
    console.log(
      `[chaos] whole run: ${results.length} cases, ${summary.requests} requests in ${(summary.durationMs / 1000).toFixed(0)} s, ` +
        `${summary.failures.length} failed (${excluded} while the apiserver was down, ${outside} between the cases), ` +
        `${summary.wrongValues.length} wrong values, ${summary.watchEvents} watch events, ` +
        `${summary.throttledRetries} 429s retried, ${summary.watchResumes} watch resumes, ${summary.relists} relists`,
    );
    expect(summary.requests).toBeGreaterThan(1_000);
    expect(summary.watchEvents).toBeGreaterThan(100);
    // Failures outside every case's window (before the first, while a case waited for a whole
    // system) count too: the system was broken while no fault was being injected.
    expect(
      outside,
      `failed requests between the cases — broken while no fault was injected: ${failureKinds(summary.failures)}`,
    ).toBe(0);
    expect(
      summary.wrongValues,
      'wrong values: clients were answered with data that was never written',
    ).toEqual([]);
  }, 120_000);
});

describe('negative control: the same checker over replicas that drop a plan on reassignment', () => {
  it(
    'sees the failures (handover killed as the move starts, so the source stops serving long before the repoint)',
    async () => {
      const unsafe = ['--webhook.unsafeDropPlanOnReassign=true'];
      await allowExtraArgKeys(admin, SWITCHYARD_NAMESPACE, ['webhook.unsafeDropPlanOnReassign']);
      await createInstance(admin, NC_A, { replicas: 1, extraArgs: unsafe });
      await createInstance(admin, NC_B, { replicas: 1, extraArgs: unsafe });
      await createTwoVersionTarget(admin, NC_TARGET, 'Gadget');
      await createRenameConfig(admin, NC_CONFIG, NC_TARGET, NC_A);
      await waitHealthy(admin, [NC_A, NC_B]);
      await waitFor(
        `${NC_TARGET} first applied on ${NC_A}`,
        async () =>
          handoverReady(await configStatus(admin, NC_CONFIG))?.status === 'True' ? true : undefined,
        { timeoutMs: 120_000, intervalMs: 250 },
      );
      const control = new ConversionLoad(loadTarget(admin, NC_TARGET, 'Gadget', OBJECTS_NAMESPACE), {
        run: 'control',
        ...CHAOS_LOAD,
      });
      await control.start();
      await sleep(TIMING.settleMs);
      const move: Move = {
        kind: 'pin',
        what: `config pinned to ${NC_B}`,
        from: NC_A,
        to: NC_B,
        change: () => patchConfig(admin, NC_CONFIG, { webhookServerRef: { name: NC_B } }),
      };
      const handoverKilled: Fault = { ...killWorkers(['handover']), delay: 'at-once' };
      // As if NC-A's replicas had been killed: what the source-replica case would excuse.
      const asIfKilled = {
        addresses: await serviceEndpoints(admin, SWITCHYARD_NAMESPACE, webhookServiceName(NC_A)),
        serviceHost: `${webhookServiceName(NC_A)}.${SWITCHYARD_NAMESPACE}.svc`,
      };
      const result = await runCase(
        { ...subject, config: NC_CONFIG, target: NC_TARGET, instances: [NC_A, NC_B], load: control },
        move,
        handoverKilled,
        random,
        TIMING,
      );
      const summary = await control.stop();
      console.log(`${figureLine(result)} | NEGATIVE CONTROL`);
      expect(
        result.failures.length + result.wrongValues.length,
        'the clients saw the failures of replicas that drop a plan the target still names',
      ).toBeGreaterThan(0);
      expect(result.conversions.failed, "the apiserver's own count saw failed conversions").toBeGreaterThan(
        0,
      );
      expect(violations(result).length, 'the checker reports them').toBeGreaterThan(0);
      const notExplained = result.failures.filter(
        (f) => killedReplicaFailure(f.message, asIfKilled) === undefined,
      );
      console.log(
        `[chaos] negative control: ${notExplained.length} of ${result.failures.length} failed requests not explained ` +
          `by a killed source replica: ${failureKinds(notExplained).slice(0, 600)}`,
      );
      expect(
        notExplained.length,
        "failures a killed source replica would not excuse (a replica answering without a plan is the move's fault)",
      ).toBeGreaterThan(0);
      expect(summary.failures.length).toBeGreaterThanOrEqual(result.failures.length);
    },
    CASE_TIMEOUT_MS,
  );
});

// ---------------------------------------------------------------------------------------------
// Helpers

function pick<T>(items: readonly T[]): T {
  return pickFrom(items, random);
}

async function replicas(instance: string): Promise<PodRef[]> {
  return podsMatching(admin, SWITCHYARD_NAMESPACE, `${WEBHOOK_SERVER_LABEL}=${instance}`);
}

/** The processes the node agent runs for the Pods now, as one value (the same value: the same processes). */
function processesOf(pods: readonly PodRef[]): string {
  const running = cluster.nodeAgent.runningPods();
  return JSON.stringify(
    pods.map((p) => [
      p.name,
      running.filter((r) => r.namespace === p.namespace && r.name === p.name).flatMap((r) => r.pids),
    ]),
  );
}

/** The instance's live served-set Leases as lease-aggregate counts them (what the gate reads too). */
async function reportingReplicas(instance: string): Promise<number | undefined> {
  const res = await request(
    admin,
    HttpMethod.GET,
    `/apis/${API_VERSION}/conversionwebhookservers/${instance}`,
  );
  return (res.body as { status?: { reportingReplicas?: number } }).status?.reportingReplicas;
}
