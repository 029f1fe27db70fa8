// `switchyard replay` against the least any replay must do: reading the same streams.
//
//   SWITCHYARD_BIN_NATS=… node bench/replay.ts        (REPLAY_CONFIGS=2000 REPLAY_ROUNDS=11)
//
// A recorded history on a real JetStream, as a live assign leaves it without an apiserver: a
// sharded pool of 5 instances; per config its creation, assign's decision on it, the status
// write that decision leads to, and assign's decision on that; and one Lease record per config,
// a kind assign does not read (K8S holds every recorded kind). Each decision is taken by
// `configAssignmentOnView` on a view fed the records as they are published, and recorded as the
// handler records it. Then, alternating, in the same process:
//   * floor: one ordered consumer reads every message of K8S and DECISIONS, touching each payload;
//   * replay: `replay()` reads the same messages, rebuilds the view and takes every decision
//     again (each must come out the same, or the bench fails).
// Throughput is the messages of both streams per second; the target is replay ≥ 0.5 × floor.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliverPolicy, type JetStreamClient, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
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
import { configAssignmentOnView } from '../src/handlers/assign.ts';
import { ASSIGN_VIEW_KINDS } from '../src/handlers/assign-world.ts';
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
    const decided = configAssignmentOnView(view, { kind: 'crdconfig', name }, decidedAt);
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

/** The floor: every message of a stream through one ordered consumer, payload touched. */
async function rawConsume(js: JetStreamClient, stream: string): Promise<{ messages: number; bytes: number }> {
  const consumer = await js.consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  const messages = await consumer.consume({ max_messages: 1_000 });
  let count = 0;
  let bytes = 0;
  for await (const m of messages) {
    count++;
    bytes += m.data.length;
    if (m.info.pending === 0) break;
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

const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-replay-'));
const server = await NatsServer.start(dir, log);
try {
  const nc = await connect({ servers: server.url });
  const jsm = await jetstreamManager(nc);
  await ensureTopology(jsm, DEFAULT_TOPOLOGY);
  const js = jetstream(nc);
  const started = performance.now();
  const history = await recordHistory(js);
  console.log(
    `history: ${history.records} records, ${history.decisions} decisions, ${CONFIGS} configs on ${INSTANCES.length} instances (recorded in ${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );
  const total = history.records + history.decisions;
  const times = { floor: [] as number[], replay: [] as number[] };
  // Round 0 warms the code up and is not counted.
  for (let round = 0; round <= ROUNDS; round++) {
    const t = round === 0 ? { floor: [], replay: [] } : times;
    const read = await timed(t.floor, async () => [
      await rawConsume(js, STREAMS.records),
      await rawConsume(js, STREAMS.decisions),
    ]);
    if (read[0]?.messages !== history.records || read[1]?.messages !== history.decisions)
      throw new Error(`the floor read ${JSON.stringify(read)}`);
    const report = await timed(t.replay, () => replay(js, jsm, { concern: 'assign' }, log));
    const differ = report.decisions.filter((d) => d.verdict !== 'same');
    if (report.decisions.length !== history.decisions || differ.length > 0)
      throw new Error(`replay: ${report.decisions.length} decisions, ${differ.length} not the same`);
  }
  const rate = (ms: number) => Math.round((total * 1000) / ms).toLocaleString('en-US');
  const [f, r] = [median(times.floor), median(times.replay)];
  // Each round's replay against the floor read just before it: the machine's speed drifts
  // between rounds much more than within one.
  const ratios = times.floor.map((ms, i) => ms / (times.replay[i] as number)).sort((a, b) => a - b);
  console.log(
    `\n## Replay: ${total.toLocaleString('en-US')} messages (K8S and DECISIONS), medians of ${ROUNDS} alternating rounds\n`,
  );
  console.log('| reader | time | messages/s | vs floor |');
  console.log('|---|---|---|---|');
  console.log(`| floor: read both streams, touch each payload | ${f.toFixed(0)} ms | ${rate(f)} | 1.00× |`);
  console.log(
    `| switchyard replay: rebuild the view, take every decision again, compare | ${r.toFixed(0)} ms | ${rate(r)} | ${(f / r).toFixed(2)}× |`,
  );
  console.log(
    `\nreplay / floor, round by round: median ${median(ratios).toFixed(2)}× (${ratios[0]?.toFixed(2)}× to ${ratios.at(-1)?.toFixed(2)}×)`,
  );
  await nc.close();
} finally {
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
