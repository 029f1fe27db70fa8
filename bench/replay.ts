// `switchyard replay` against the least any replay must do: reading the same messages.
//
//   SWITCHYARD_BIN_NATS=… node bench/replay.ts                    a synthetic history (REPLAY_CONFIGS=2000)
//   SWITCHYARD_BIN_NATS=… node bench/replay.ts --store=<dir>      a copy of a live stack's JetStream store,
//       e.g. `<cluster dir>/jetstream` of `scripts/demo.sh --keep-running --targets=200` once it has
//       printed its summary (the cluster directory is in the KUBECONFIG it prints)
//   (REPLAY_ROUNDS=11 either way)
//
// The synthetic history is the worst case for replay: nearly every record is one assign reads.
// A sharded pool of 5 instances; per config its creation, assign's decision on it, the status
// write that decision leads to, and assign's decision on that; and one Lease record per config
// (K8S holds every recorded kind). Each decision is taken by `configAssignmentOnView` on a view
// fed the records as they are published, and recorded as the handler records it. A live stack's
// history holds, besides, what assign does not read (CRDs with their schemas, Deployments,
// EndpointSlices, Leases), the instances' status writes and the other handlers' status writes.
//
// Then, alternating, in the same process:
//   * floor: one ordered consumer reads K8S up to the last sequence a decision was made on, and
//     another every assign decision of DECISIONS, touching each payload;
//   * replay: `replay()` reads the same messages, rebuilds the view and takes every decision
//     again (each must come out the same, or the bench fails).
// Throughput is those messages per second; the target is replay ≥ 0.5 × floor.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { API_VERSION } from '../src/api/constants.ts';
import {
  type DecisionRecord,
  decisionRecordSchema,
  encodeMessage,
  type ObjectEvent,
  objectEventSchema,
} from '../src/bus/messages.ts';
import { decisionSubject, objectSubject } from '../src/bus/subjects.ts';
import { DEFAULT_TOPOLOGY, ensureTopology, STREAMS } from '../src/bus/topology.ts';
import { ObjectView } from '../src/bus/view.ts';
import { ASSIGN_VIEW_KINDS } from '../src/handlers/assign/world.ts';
import { configAssignmentOnView } from '../src/handlers/assign.ts';
import { NatsServer } from '../src/local-cluster/nats.ts';
import { replay } from '../src/replay/replay.ts';

const CONFIGS = Number(process.env.REPLAY_CONFIGS ?? 2_000);
const ROUNDS = Number(process.env.REPLAY_ROUNDS ?? 11);
const INSTANCES = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
const log = pino({ level: 'warn' });

function event(
  object: Record<string, unknown> & { metadata: { name: string; namespace?: string } },
  rv: number,
): Uint8Array {
  const recorded: ObjectEvent = {
    op: 'upsert',
    object: {
      ...object,
      metadata: { ...object.metadata, uid: `uid-${object.metadata.name}`, resourceVersion: String(rv) },
    },
    observedBy: 'watch',
    observedAt: new Date().toISOString(),
  };
  return encodeMessage(objectEventSchema, recorded);
}

/** Publishes the history, deciding as assign would on a view fed the same records. */
async function recordHistory(js: JetStreamClient): Promise<{ records: number; decisions: number }> {
  const view = new ObjectView(ASSIGN_VIEW_KINDS, log);
  let rv = 0;
  let records = 0;
  let decisions = 0;
  const record = async (
    kind: string,
    object: Record<string, unknown> & { metadata: { name: string; namespace?: string } },
  ) => {
    const subject = objectSubject({
      kind,
      namespace: object.metadata.namespace ?? '',
      name: object.metadata.name,
    });
    const data = event(object, ++rv);
    const ack = await js.publish(subject, data);
    view.apply({ subject, seq: ack.seq, data });
    records++;
  };
  const decide = async (name: string) => {
    const key = `crdconfig/${name}`;
    const decidedAt = new Date().toISOString();
    const viewSeq = view.sequence;
    const decided = configAssignmentOnView(view, { kind: 'crdconfig', name }, decidedAt, 'switchyard-system');
    if (!decided) throw new Error(`nothing to decide about ${key}`);
    const rec: DecisionRecord = { concern: 'assign', key, viewSeq, decidedAt, decision: decided.decision };
    await js.publish(decisionSubject('assign', key), encodeMessage(decisionRecordSchema, rec));
    decisions++;
    return decided.decision;
  };
  for (const name of INSTANCES)
    await record('webhookserver', {
      apiVersion: API_VERSION,
      kind: 'ConversionWebhookServer',
      metadata: { name },
      spec: { replicas: 2, sharding: { enabled: true, weight: 1 } },
    });
  for (let i = 0; i < CONFIGS; i++) {
    const name = `widgets${i}`;
    const config = {
      apiVersion: API_VERSION,
      kind: 'CRDConversionConfig',
      metadata: { name },
      spec: { targetCRD: { name: `widgets${i}.example.org` }, hubVersion: 'v2', spokes: [] },
    };
    await record('crdconfig', config);
    const first = await decide(name);
    await record('crdconfig', { ...config, status: first.write });
    await decide(name);
    await record('lease', {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: `replica-${i}`, namespace: 'default' },
      spec: { holderIdentity: `pod-${i}`, renewTime: new Date().toISOString() },
    });
  }
  view.stop();
  return { records, decisions };
}

/** The floor: the messages of a stream (matching `filter`) up to `until`, payload touched. */
async function rawConsume(
  js: JetStreamClient,
  stream: string,
  range: { filter?: string; until?: number },
): Promise<{ messages: number; bytes: number }> {
  const until = range.until ?? Number.POSITIVE_INFINITY;
  const consumer = await js.consumers.get(stream, {
    deliver_policy: DeliverPolicy.All,
    ...(range.filter && { filter_subjects: [range.filter] }),
  });
  const messages = await consumer.consume({ max_messages: 1_000 });
  let count = 0;
  let bytes = 0;
  for await (const m of messages) {
    if (m.seq > until) break;
    count++;
    bytes += m.data.length;
    if (m.info.pending === 0 || m.seq === until) break;
  }
  await messages.close();
  return { messages: count, bytes };
}

async function timed<T>(times: number[], run: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const result = await run();
  times.push(performance.now() - t);
  return result;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1] as number;

/** Alternating rounds of the floor and replay over the history `js` holds; prints the table. */
async function measure(js: JetStreamClient, jsm: JetStreamManager, what: string): Promise<void> {
  const first = await replay(js, jsm, { concern: 'assign' }, log);
  const until = Math.max(0, ...first.decisions.map((d) => d.viewSeq));
  const floorRead = async () =>
    (await rawConsume(js, STREAMS.records, { until })).messages +
    (await rawConsume(js, STREAMS.decisions, { filter: 'decision.assign.>' })).messages;
  const total = await floorRead();
  console.log(
    `${what}: ${first.decisions.length} assign decisions on ${first.recordsApplied} records (K8S up to ${until}); ${total.toLocaleString('en-US')} messages to read`,
  );
  const times = { floor: [] as number[], replay: [] as number[] };
  // Round 0 warms the code up and is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    const t = round === 0 ? { floor: [], replay: [] } : times;
    const read = await timed(t.floor, floorRead);
    if (read !== total) throw new Error(`the floor read ${read} messages, then ${total}`);
    const report = await timed(t.replay, () => replay(js, jsm, { concern: 'assign' }, log));
    const differ = report.decisions.filter((d) => d.verdict !== 'same');
    if (report.decisions.length !== first.decisions.length || differ.length > 0)
      throw new Error(`replay: ${report.decisions.length} decisions, ${differ.length} not the same`);
  }
  const rate = (ms: number) => Math.round((total * 1000) / ms).toLocaleString('en-US');
  const [f, r] = [median(times.floor), median(times.replay)];
  // Each round's replay against the floor read just before it: the machine's speed drifts
  // between rounds much more than within one.
  const ratios = times.floor.map((ms, i) => ms / (times.replay[i] as number)).sort((a, b) => a - b);
  console.log(`\n## Replay: ${what}, medians of ${ROUNDS} alternating rounds\n`);
  console.log('| reader | time | messages/s | vs floor |');
  console.log('|---|---|---|---|');
  console.log(
    `| floor: read the same messages, touch each payload | ${f.toFixed(1)} ms | ${rate(f)} | 1.00× |`,
  );
  console.log(
    `| switchyard replay: rebuild the view, take every decision again, compare | ${r.toFixed(1)} ms | ${rate(r)} | ${(f / r).toFixed(2)}× |`,
  );
  console.log(
    `\nreplay / floor, round by round: median ${median(ratios).toFixed(2)}× (${ratios[0]?.toFixed(2)}× to ${ratios.at(-1)?.toFixed(2)}×)`,
  );
}

/** A JetStream of its own in a temporary directory, holding a copy of `store` when given. */
async function withServer(
  store: string | undefined,
  run: (nc: NatsConnection) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-replay-'));
  if (store) await cp(store, join(dir, 'jetstream'), { recursive: true });
  const server = await NatsServer.start(dir, log);
  try {
    const nc = await connect({ servers: server.url });
    await run(nc);
    await nc.close();
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const store = process.argv.find((a) => a.startsWith('--store='))?.slice('--store='.length);
await withServer(store, async (nc) => {
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  if (store) {
    await measure(js, jsm, `the history a live stack recorded (${store})`);
    return;
  }
  await ensureTopology(jsm, DEFAULT_TOPOLOGY);
  const started = performance.now();
  const history = await recordHistory(js);
  const took = ((performance.now() - started) / 1000).toFixed(1);
  await measure(
    js,
    jsm,
    `a synthetic history: ${CONFIGS} configs on ${INSTANCES.length} instances, ${history.records} records and ${history.decisions} decisions (recorded in ${took} s)`,
  );
});
