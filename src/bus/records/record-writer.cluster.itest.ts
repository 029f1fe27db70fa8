// Two watcher replicas record the same changes at once on a 3-node JetStream cluster with R3
// streams: each change is stored once, and neither writer fails. A clustered leader answers the
// second publish of a message id still being stored with 10158 ("duplicate message id is in
// process"); the writer must read the record again rather than give up, which used to send the
// watcher into a relist (seen 101 and 116 times per rebalance in bench/replicated-bus.ts).
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnNatsCluster, startOwnNatsCluster } from '../../../test/support/nats.ts';
import { natsServerList } from '../connect.ts';
import type { ObjectEvent } from '../messages.ts';
import { objectSubject } from '../subjects.ts';
import { DEFAULT_TOPOLOGY, ensureTopology, STREAMS, tombstoneTtl } from '../topology.ts';
import { RecordWriter, type WriteOutcome } from './record-writer.ts';

const OBJECTS = 200;
const topology = { ...DEFAULT_TOPOLOGY, streamReplicas: 3 as const };
let nats: OwnNatsCluster;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  nats = await startOwnNatsCluster('records-cluster', pino({ level: 'warn' }));
  const setup = await connect({ servers: natsServerList(nats.cluster.url) });
  connections.push(setup);
  await ensureTopology(await jetstreamManager(setup), topology);
});

afterAll(async () => {
  for (const nc of connections) await nc.close();
  await nats?.stop();
});

/** A writer connected to one node, as a watcher replica is to whichever node it reached. */
async function writerOn(url: string): Promise<RecordWriter> {
  const nc = await connect({ servers: url });
  connections.push(nc);
  return new RecordWriter({
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    maxPayload: nc.info?.max_payload ?? 0,
    tombstoneTtl: tombstoneTtl(topology),
  });
}

function change(i: number): { subject: string; event: ObjectEvent } {
  const name = `thing-${i}`;
  return {
    subject: objectSubject({ kind: 'ConfigMap', namespace: 'default', name }),
    event: {
      op: 'upsert',
      observedBy: 'watch',
      observedAt: new Date().toISOString(),
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'default', uid: `uid-${i}`, resourceVersion: `${1000 + i}` },
      },
    },
  };
}

describe('recording on a replicated K8S stream', () => {
  it('stores each change once when two writers on different nodes record it at the same instant', async () => {
    const [a, b] = await Promise.all([
      writerOn(nats.cluster.nodes[0]?.url ?? ''),
      writerOn(nats.cluster.nodes[1]?.url ?? ''),
    ]);
    const outcomes: WriteOutcome[] = [];
    for (let i = 0; i < OBJECTS; i++) {
      const { subject, event } = change(i);
      const both = await Promise.all([a.write(subject, event), b.write(subject, event)]);
      outcomes.push(...both.map((r) => r.outcome));
      expect(
        both.map((r) => r.stored.summary),
        `both writers end on the one record of ${subject}: ${JSON.stringify(both)}`,
      ).toEqual([both[0]?.stored.summary, both[0]?.stored.summary]);
    }
    expect(outcomes.filter((o) => o === 'stored').length).toBe(OBJECTS);
    expect(outcomes.filter((o) => o === 'duplicate').length).toBe(OBJECTS);
    const nc = connections[0] as NatsConnection;
    expect((await (await jetstreamManager(nc)).streams.info(STREAMS.records)).state.messages).toBe(OBJECTS);
  });
});
