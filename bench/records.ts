// Recording and view start on the bus: what the never-older check costs a watcher,
// and how fast a view rebuilds from the latest-state mirror. Needs nats-server
// (scripts/lib/bootstrap.sh builds it):
//
//   SWITCHYARD_BIN_NATS=… node bench/records.ts
//
// Baselines in the same run: a plain publish with a message id (what the watcher
// did before: dedup window only) for the write cost; and for the view start,
// decoding every record of the history stream (what a view read before the
// latest-state mirror), so the two rebuilds are compared on one server.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { followLatest } from '../src/bus/follow-latest.ts';
import {
  decodeMessage,
  encodeMessage,
  type ObjectEvent,
  objectEventId,
  objectEventSchema,
} from '../src/bus/messages.ts';
import { NOTHING_STORED, RecordWriter, type StoredRecord } from '../src/bus/records/record-writer.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { DEFAULT_TOPOLOGY, ensureTopology, STREAMS } from '../src/bus/topology.ts';
import { ObjectView } from '../src/bus/view.ts';
import { NatsServer } from '../src/local-cluster/nats.ts';

const OBJECTS = 5_000;
const log = pino({ level: 'warn' });

function event(i: number, rv: number, kind: string): { subject: string; event: ObjectEvent } {
  const name = `obj-${i}`;
  const object = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'bench', uid: `uid-${kind}-${i}`, resourceVersion: String(rv) },
    data: { payload: 'x'.repeat(300) },
  };
  return {
    subject: objectSubject({ kind, namespace: 'bench', name }),
    event: { op: 'upsert', object, observedBy: 'watch', observedAt: new Date().toISOString() },
  };
}

async function timed(label: string, n: number, fn: () => Promise<void>): Promise<number> {
  const started = performance.now();
  await fn();
  const ms = performance.now() - started;
  console.log(
    `${label.padEnd(58)} ${(ms / n).toFixed(3).padStart(8)} ms/record  ${Math.round((n / ms) * 1000)
      .toString()
      .padStart(7)} records/s`,
  );
  return ms;
}

const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-'));
const server = await NatsServer.start(dir, log);
const nc = await connect({ servers: server.url });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
await ensureTopology(jsm, DEFAULT_TOPOLOGY);
const writer = new RecordWriter({ js, jsm, maxPayload: nc.info?.max_payload ?? 0, tombstoneTtl: '3600s' });

console.log(`${OBJECTS} objects, one record each, then one update each (sequential, one process)`);
const plain = await timed('baseline: plain publish with a message id', OBJECTS, async () => {
  for (let i = 0; i < OBJECTS; i++) {
    const { subject, event: e } = event(i, 10, 'plain');
    await js.publish(subject, encodeMessage(objectEventSchema, e), { msgID: objectEventId(e) });
  }
});
const known = new Map<string, StoredRecord>();
const cached = await timed('RecordWriter create, absence known (a running watcher)', OBJECTS, async () => {
  for (let i = 0; i < OBJECTS; i++) {
    const { subject, event: e } = event(i, 10, 'cached');
    known.set(subject, (await writer.write(subject, e, known.get(subject) ?? NOTHING_STORED)).stored);
  }
});
await timed('RecordWriter create, nothing known (reads first)', OBJECTS, async () => {
  for (let i = 0; i < OBJECTS; i++) {
    const { subject, event: e } = event(i, 10, 'unknown');
    await writer.write(subject, e);
  }
});
await timed('RecordWriter update, expectation known', OBJECTS, async () => {
  for (let i = 0; i < OBJECTS; i++) {
    const { subject, event: e } = event(i, 20, 'cached');
    known.set(subject, (await writer.write(subject, e, known.get(subject))).stored);
  }
});
const racing = await timed('RecordWriter update, stale guess (lost race: read, retry)', OBJECTS, async () => {
  for (let i = 0; i < OBJECTS; i++) {
    const { subject, event: e } = event(i, 30, 'cached');
    await writer.write(subject, e, { seq: 1, summary: undefined });
  }
});
console.log(
  `cost of ordering: ${(cached / plain).toFixed(2)}× a plain publish when the writer knows the subject, ${(racing / plain).toFixed(2)}× after a lost race`,
);

const KINDS = ['plain', 'cached', 'unknown'];
console.log(`\nview start over ${OBJECTS * 4} records of ${OBJECTS * 3} objects`);
const view = new ObjectView(KINDS, log);
const latestMs = await timed('ObjectView.start from K8S_LATEST (last per subject)', OBJECTS * 3, () =>
  view.start(js),
);
view.stop();
const historyMs = await timed('baseline: decode every record of the K8S history', OBJECTS * 4, async () => {
  const consumer = await js.consumers.get(STREAMS.records, {
    filter_subjects: ['k8s.>'],
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  const latest = new Map<string, unknown>();
  for await (const m of messages) {
    latest.set(m.subject, decodeMessage(objectEventSchema, m.data));
    if (m.info.pending === 0) break;
  }
  await messages.close();
});
const held = KINDS.reduce((n, kind) => n + view.list(kind).length, 0);
console.log(`view objects: ${held}; latest ÷ history time: ${(latestMs / historyMs).toFixed(2)}`);
const follower = await followLatest({
  js,
  stream: STREAMS.latest,
  filters: ['k8s.nothing.>'],
  onMessage: () => undefined,
  log,
});
const emptyStart = performance.now();
await follower.caughtUp;
console.log(`caught up on a filter with no records in ${(performance.now() - emptyStart).toFixed(1)} ms`);
follower.stop();

await nc.close();
await server.stop();
await rm(dir, { recursive: true, force: true });
