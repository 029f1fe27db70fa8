// A bus that survives losing a node (issue 28): Switchyard installed from deploy/ on a 3-node
// JetStream cluster with every stream and the pacer's buckets replicated three times
// (bus.streamReplicas=3, as deploy/nats-cluster sets it), two instances of two replicas, a pool
// of targets rebalanced by every case's move (B joining the pool, its weight down and up, B
// leaving) while a load reads and writes one of them at its non-storage version. One fault per
// case, injected while the rebalance is under way:
//
//   * a node SIGKILLed, and started again on its store 10 s later;
//   * the leader of the WORK stream (every work item) SIGKILLed and started again;
//   * a node frozen (SIGSTOP) for 12 s, far past its routes' pings (1 s × 3): a partition of one
//     node from the other two, its clients cut off with it, then healed (SIGCONT);
//   * the cluster rolled, one node at a time (lame duck as deploy/'s preStop does, back, every
//     replica current, next).
//
// Each case must end as the single-server chaos cases do (support/chaos-case.ts: no failed
// request, no wrong value, no failed conversion counted by the apiserver, the move verified,
// every work item at a terminal outcome, no duplicate side effect), the rebalance too (every pool
// target served where the resolver says, verified), and every stream back to three current
// replicas. What `bus stats` shows of the replicas, during the fault and after, is in each case's
// figures. SWITCHYARD_CHAOS_SEED replays a run's choices; SWITCHYARD_CHAOS_ROUNDS=<n> runs the
// four faults n times, a soak (docs/reliability.md). ~5 minutes on two cores.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION } from '../../src/api/constants.ts';
import type { StreamStats } from '../../src/bus/stats.ts';
import { STREAMS } from '../../src/bus/topology.ts';
import { poolMember, rendezvousWinner } from '../../src/core/assignment.ts';
import { HttpMethod } from '../../src/kube/request.ts';
import type { LocalCluster } from '../../src/local-cluster/cluster.ts';
import { SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
import { natsConnectOptions } from '../../src/local-cluster/nats-client.ts';
import type { NatsCluster } from '../../src/local-cluster/nats-cluster.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import type { ConversionLoad } from '../../src/scenario/conversion-load.ts';
import {
  configStatuses,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  handoverReady,
  request,
  servingInstances,
} from '../../src/scenario/fleet.ts';
import { useInstalledCluster } from '../e2e/support/installed-cluster.ts';
import {
  type CaseResult,
  type CaseTiming,
  type Fault,
  figureLine,
  runCase,
  type Subject,
  sleep,
  violations,
} from './support/chaos-case.ts';
import { loadedSubject, pick, pickTarget, waitHealthy } from './support/fleet.ts';
import { MoveCycle } from './support/moves.ts';
import { describeReplication, fullyReplicated, replicationOf } from './support/replication.ts';
import { chaosSeed, seededRandom } from './support/seeded.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'chaos-cluster' });
const A = 'cluster-a';
const B = 'cluster-b';
const GROUP = 'cluster.switchyard.dev';
const CONFIG = 'cluster-target';
const OBJECTS_NAMESPACE = 'cluster-load';
/** Targets the pool serves beside the loaded one: each pool move rebalances them too. */
const POOL_TARGETS = ['gears', 'cogs', 'rivets', 'hinges', 'pistons', 'rotors', 'axles', 'cranks'];
const NODE_DOWN_MS = 10_000;
/** Far past a route's 3 unanswered pings a second apart (src/local-cluster/nats-cluster.ts). */
const PARTITION_MS = 12_000;
const TIMING: CaseTiming = { moveTimeoutMs: 180_000, settleMs: 5_000, drainTimeoutMs: 150_000 };
const CASE_TIMEOUT_MS = 600_000;
const ROUNDS = Number(process.env.SWITCHYARD_CHAOS_ROUNDS ?? '1');

const seed = chaosSeed();
const random = seededRandom(seed);
const { target: TARGET, weights: WEIGHTS } = pickTarget(GROUP, A, B);

const chaos = useInstalledCluster('chaos-cluster', { instances: [A, B], log, natsCluster: true });
let admin: KubeConfig;
let cluster: LocalCluster;
let nats: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let load: ConversionLoad;
let subject: Subject;
let cycle: MoveCycle;
const results: CaseResult[] = [];

beforeAll(async () => {
  process.stderr.write(
    `[chaos-cluster] seed ${seed} (SWITCHYARD_CHAOS_SEED=${seed} replays this run's choices)\n`,
  );
  const installed = await chaos.start();
  ({ admin, cluster } = installed);
  if (!cluster.natsCluster) throw new Error('the local stack started one nats-server, not a cluster');
  nats = cluster.natsCluster;
  nc = await connect({
    ...natsConnectOptions(cluster),
    name: 'chaos-cluster-checks',
    maxReconnectAttempts: -1,
    pingInterval: 2_000,
  });
  jsm = await jetstreamManager(nc);
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: OBJECTS_NAMESPACE } } });

  await createInstance(admin, A, { default: true, replicas: 2, sharding: { enabled: true, weight: 1 } });
  await createInstance(admin, B, { replicas: 2 });
  await createTwoVersionTarget(admin, TARGET, 'Widget');
  await createRenameConfig(admin, CONFIG, TARGET);
  for (const plural of POOL_TARGETS) {
    await createTwoVersionTarget(admin, `${plural}.${GROUP}`, kindOf(plural));
    await createRenameConfig(admin, `cluster-${plural}`, `${plural}.${GROUP}`);
  }
  await waitRebalanced('the first apply of every target');
  subject = await loadedSubject({
    installed,
    jsm,
    run: 'chaos-cluster',
    config: CONFIG,
    target: TARGET,
    namespace: OBJECTS_NAMESPACE,
    instances: [A, B],
  });
  load = subject.load;
  cycle = new MoveCycle({ kc: admin, config: CONFIG, a: A, b: B, weights: WEIGHTS, poolOnly: true });
  await waitHealthy(admin, [A, B]);
  await sleep(TIMING.settleMs);
}, 900_000);

// ---------------------------------------------------------------------------------------------
// The faults

const nodeKilled: Fault = {
  name: `SIGKILL a NATS node, start it again on its store ${NODE_DOWN_MS / 1000} s later`,
  delay: 'drawn',
  async inject(ctx) {
    const node = pick(nats.nodes, random);
    await node.stop({ kill: true });
    await sleep(NODE_DOWN_MS / 2);
    ctx.note(`${node.name} down: ${await replicationLine()}`);
    await sleep(NODE_DOWN_MS / 2);
    await node.launch();
    ctx.note(`${node.name} back after ${NODE_DOWN_MS / 1000} s`);
  },
};

const workLeaderKilled: Fault = {
  name: `SIGKILL the leader of stream ${STREAMS.work}, start it again`,
  delay: 'drawn',
  async inject(ctx) {
    const leader = await nats.streamLeader(STREAMS.work);
    await leader.stop({ kill: true });
    const next = await nats.streamLeader(STREAMS.work);
    if (next === leader) ctx.fail(`no other node took over ${STREAMS.work} from ${leader.name}`);
    ctx.note(`${leader.name} led ${STREAMS.work}; ${next.name} leads it now: ${await replicationLine()}`);
    await leader.launch();
  },
};

const nodePartitioned: Fault = {
  name: `a NATS node cut off from the other two (SIGSTOP ${PARTITION_MS / 1000} s, past its route pings), then healed`,
  delay: 'drawn',
  async inject(ctx) {
    const node = pick(nats.nodes, random);
    node.freeze();
    try {
      await sleep(PARTITION_MS / 2);
      ctx.note(`${node.name} cut off: ${await replicationLine()}`);
      await sleep(PARTITION_MS / 2);
    } finally {
      node.thaw();
    }
  },
};

const clusterRolled: Fault = {
  name: 'the NATS cluster rolled one node at a time (lame duck, back, every replica current, next)',
  delay: 'at-once',
  async inject(ctx) {
    for (const node of nats.nodes) {
      const started = Date.now();
      await node.stopInLameDuck();
      await node.launch();
      await waitAllCurrent();
      ctx.note(`${node.name} rolled in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  },
};

const FAULTS: Fault[] = [nodeKilled, workLeaderKilled, nodePartitioned, clusterRolled];

// ---------------------------------------------------------------------------------------------
// The cases

describe('a rebalance under load on a 3-node JetStream cluster survives losing a node', () => {
  for (const [round, fault] of Array.from({ length: ROUNDS }, (_, r) =>
    FAULTS.map((f) => [r + 1, f] as const),
  ).flat()) {
    it(
      ROUNDS > 1 ? `round ${round}: ${fault.name}` : fault.name,
      async () => {
        await waitHealthy(admin, [A, B]);
        const move = cycle.next();
        const result = await runCase(subject, move, fault, random, TIMING);
        results.push(result);
        const rebalance = await waitRebalanced(`the rebalance after "${move.what}"`).then(
          (ms) => ({ ok: true as const, ms }),
          (err: Error) => ({ ok: false as const, why: err.message }),
        );
        if (!rebalance.ok) console.log(`[chaos-cluster] ${rebalance.why}`);
        // Under the load a follower is often one write behind for an instant: what counts is that
        // every stream is seen whole again, not one read that lands on such an instant.
        const after = await waitAllCurrent().catch(() => replicationOf(jsm));
        const pool = rebalance.ok
          ? `all ${POOL_TARGETS.length} pool targets verified where the resolver says`
          : 'pool NOT rebalanced';
        console.log(`${figureLine(result)} | ${pool} | after: ${describeReplication(after)}`);
        expect(violations(result), 'what went wrong, and what it means in production').toEqual([]);
        expect(rebalance, 'every pool target served, verified, where the resolver says').toMatchObject({
          ok: true,
        });
        expect(
          after.filter((s) => s.replication.replicas !== 3 || !fullyReplicated(s)).map((s) => s.name),
          'streams without three current replicas after the fault: one more lost node loses their data',
        ).toEqual([]);
      },
      CASE_TIMEOUT_MS,
    );
  }

  it('over the whole run: no request failed, no value was wrong, no Switchyard process exited', async () => {
    const summary = await load.stop();
    const inWindows = results.reduce((n, r) => n + r.failures.length, 0);
    console.log(
      `[chaos-cluster] whole run: ${results.length} cases, ${summary.requests} requests in ` +
        `${(summary.durationMs / 1000).toFixed(0)} s, ${summary.failures.length} failed, ` +
        `${summary.wrongValues.length} wrong values, ${summary.watchEvents} watch events`,
    );
    expect(summary.requests).toBeGreaterThan(500);
    expect(summary.failures.length - inWindows, 'failed requests between the cases').toBe(0);
    expect(summary.wrongValues).toEqual([]);
    // No case killed a Pod: a restarted container crashed because a node of the bus went away.
    const pods = await admin.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: SWITCHYARD_NAMESPACE });
    const restarted = pods.items.flatMap((p) =>
      (p.status?.containerStatuses ?? [])
        .filter((c) => c.restartCount > 0)
        .map((c) => `${p.metadata?.name}/${c.name} ×${c.restartCount}`),
    );
    expect(restarted, 'Switchyard processes that exited while the bus lost a node').toEqual([]);
    await nc.close();
  }, 120_000);
});

// ---------------------------------------------------------------------------------------------
// Helpers

function kindOf(plural: string): string {
  const singular = plural.slice(0, -1);
  return `${singular[0]?.toUpperCase()}${singular.slice(1)}`;
}

/** Where the resolver puts each target now: the pool as the instances' specs say it is. */
async function resolver(): Promise<(target: string) => string | undefined> {
  const pool: ReturnType<typeof poolMember>[] = [];
  for (const name of [A, B]) {
    const res = await request(admin, HttpMethod.GET, `/apis/${API_VERSION}/conversionwebhookservers/${name}`);
    const sharding = (res.body as { spec?: { sharding?: { enabled?: boolean; weight?: number } } }).spec
      ?.sharding;
    if (sharding?.enabled) pool.push(poolMember(name, sharding.weight ?? 1));
  }
  return (target) => rendezvousWinner(pool, target)?.name;
}

/**
 * Until every pool target's config assigns the resolver's instance with a verified handover
 * about it, and its CRD names that instance's Service; how long it took.
 */
async function waitRebalanced(what: string): Promise<number> {
  const started = Date.now();
  const targets = POOL_TARGETS.map((p) => ({ config: `cluster-${p}`, crd: `${p}.${GROUP}` }));
  let waiting: string[] = [];
  await waitFor(
    what,
    async () => {
      const [resolved, statuses, serving] = await Promise.all([
        resolver(),
        configStatuses(admin),
        servingInstances(admin, [A, B]),
      ]);
      waiting = targets.flatMap(({ config, crd }) => {
        const want = resolved(crd);
        const status = statuses.get(config);
        const ready = handoverReady(status);
        const verified =
          status?.assignedWebhookServer === want &&
          ready?.status === 'True' &&
          (ready.reason === 'HandoverReady' || ready.reason === 'FirstApply') &&
          serving.get(crd) === want;
        return verified
          ? []
          : [
              `${config}: wants ${want}, assigned ${status?.assignedWebhookServer}, ` +
                `HandoverReady ${ready?.status} ${ready?.reason}, the CRD names ${serving.get(crd)}`,
            ];
      });
      return waiting.length === 0 ? true : undefined;
    },
    { timeoutMs: TIMING.moveTimeoutMs, intervalMs: 500 },
  ).catch((err: Error) => {
    throw new Error(`${err.message}; not there yet: ${waiting.join('; ')}`);
  });
  return Date.now() - started;
}

/** Every stream with all its replicas current: what a rolling restart waits for between nodes. */
async function waitAllCurrent(): Promise<StreamStats[]> {
  return waitFor(
    'every stream replica current',
    async () => {
      await nats.waitForMetaLeader();
      const streams = await replicationOf(jsm);
      return streams.every(fullyReplicated) ? streams : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
}

async function replicationLine(): Promise<string> {
  return describeReplication(await replicationOf(jsm).catch(() => []));
}
