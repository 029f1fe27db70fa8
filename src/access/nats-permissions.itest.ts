// Every component's NATS user against a real nats-server configured as deploy/nats configures
// it (the same rendered authorization block): what a role needs works, and what it must not do
// is refused by the server.
import { join } from 'node:path';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, PermissionViolationError } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnBus, startOwnBus } from '../../test/support/bus.ts';
import { type Bus, connectBus } from '../bus/connect.ts';
import { encodeMessage, objectEventSchema } from '../bus/messages.ts';
import { ensureConsumer, planHandlerConsumers } from '../bus/runtime/index.ts';
import { objectSubject } from '../bus/subjects.ts';
import { STREAMS } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { defaultConfig } from '../config/schema.ts';
import { HANDOVER_WORK } from '../handlers/handover/wakes.ts';
import { HANDOVER_VIEW_KINDS } from '../handlers/handover.ts';
import { HANDLER_VIEW_PROJECTIONS } from '../views/projection.ts';
import { REPLICA_VIEW_KINDS } from '../webhook/world.ts';
import type { NatsIdentity } from './nats-permissions.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
const config = defaultConfig();
let own: OwnBus;
const opened: Bus[] = [];

beforeAll(async () => {
  own = await startOwnBus(undefined, '', { permissionViolationsExpected: true });
});

afterAll(async () => {
  for (const bus of opened) await bus.close().catch(() => undefined);
  await own?.stop();
});

async function connectAs(identity: NatsIdentity): Promise<Bus> {
  const bus = await connectBus({
    servers: own.server.url,
    credentials: { user: identity, passwordFile: join(own.natsCredentialsDir, identity) },
    name: `test-${identity}`,
    log,
    // bus-setup owns the topology; dlq, an operator's command, neither applies nor waits for it.
    mode: identity === 'bus-setup' ? 'apply' : identity === 'dlq' ? 'none' : 'verify',
  });
  opened.push(bus);
  return bus;
}

/** The server refuses the request's subject to this user. */
async function expectDenied(nc: NatsConnection, subject: string, payload = ''): Promise<void> {
  const err = await nc.request(subject, payload, { timeout: 3_000 }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, `${subject} was allowed`).toBeInstanceOf(Error);
  const chain = [err, (err as { cause?: unknown }).cause];
  expect(
    chain.some((e) => e instanceof PermissionViolationError),
    `${subject}: ${String(err)}`,
  ).toBe(true);
}

/** A subscription the server refuses: it closes with a permissions violation. */
async function expectSubscribeDenied(nc: NatsConnection, subject: string): Promise<void> {
  const sub = nc.subscribe(subject);
  const closed = await Promise.race([
    sub.closed,
    new Promise<'open'>((resolve) => setTimeout(() => resolve('open'), 3_000)),
  ]);
  expect(closed, `subscribe ${subject} stayed open`).toBeInstanceOf(PermissionViolationError);
}

async function adminJsm(): Promise<JetStreamManager> {
  return jetstreamManager(own.nc);
}

describe('NATS users: each component may do its role and nothing else', () => {
  it('bus-setup applies the topology; no other user can create or delete a stream', async () => {
    await connectAs('bus-setup');
    const watchers = await connectAs('watchers');
    await expectDenied(watchers.nc, `$JS.API.STREAM.CREATE.${STREAMS.work}`, '{}');
    await expectDenied(watchers.nc, `$JS.API.STREAM.DELETE.${STREAMS.records}`);
    const handover = await connectAs('handover');
    await expectDenied(handover.nc, `$JS.API.STREAM.DELETE.${STREAMS.work}`);
    await expectDenied(handover.nc, `$JS.API.STREAM.PURGE.${STREAMS.records}`);
  });

  it('a watcher publishes records and heartbeats, and cannot consume or publish work', async () => {
    const watchers = await connectAs('watchers');
    const ack = await watchers.js.publish('k8s.crd._.widgets_2eexample_2ecom', '{}');
    expect(ack.stream).toBe(STREAMS.records);
    expect((await watchers.js.publish('hb.lease.ns.l', '{}')).stream).toBe(STREAMS.heartbeats);
    const [partition0] = planHandlerConsumers(HANDOVER_WORK.consumers(config.bus.partitions.handover));
    if (!partition0) throw new Error('no handover consumer planned');
    await ensureConsumer(await adminJsm(), partition0);
    await expectDenied(watchers.nc, `$JS.API.CONSUMER.MSG.NEXT.${STREAMS.work}.${partition0.name}`, '{}');
    await expectDenied(watchers.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.work}.${partition0.name}`, '{}');
    await expectDenied(watchers.nc, 'work.handover.0.x', '{}');
    await expectDenied(watchers.nc, 'dlq.handover', '{}');
  });

  it('a handler consumes its own work and cannot publish records, heartbeats or pull another concern', async () => {
    const handover = await connectAs('handover');
    const planned = planHandlerConsumers(HANDOVER_WORK.consumers(config.bus.partitions.handover));
    const [first] = planned;
    if (!first) throw new Error('no handover consumer planned');
    for (const p of planned) await ensureConsumer(handover.jsm, p);
    await own.js.publish('work.handover.0.t', '{"key":"t","seq":1}');
    const consumer = await handover.js.consumers.get(first.stream, first.name);
    const m = await consumer.next({ expires: 3_000 });
    expect(m?.subject).toBe('work.handover.0.t');
    expect(await m?.ackAck()).toBe(true);

    await expectDenied(handover.nc, 'k8s.crd._.widgets_2eexample_2ecom', '{}');
    await expectDenied(handover.nc, 'hb.lease.ns.l', '{}');
    await expectDenied(handover.nc, 'work.assign.0.x', '{}');
    await expectDenied(handover.nc, 'recheck.assign.0.x', '{}');
    await expectDenied(handover.nc, '$JS.API.CONSUMER.MSG.NEXT.WORK.assign-p0', '{}');
    await expectDenied(handover.nc, '$JS.API.CONSUMER.MSG.NEXT.FANOUT.assign-pacer', '{}');
    await expectDenied(handover.nc, '$KV.pacer-assign.slot', '1');
    await expectSubscribeDenied(handover.nc, 'k8s.>');
    await expectSubscribeDenied(handover.nc, '_INBOX.watchers.>');
  });

  it('a handler may publish the work it causes: lease-aggregate hands over, and cannot assign', async () => {
    const leaseAggregate = await connectAs('lease-aggregate');
    expect((await leaseAggregate.js.publish('work.handover.3.t', '{}')).stream).toBe(STREAMS.work);
    await expectDenied(leaseAggregate.nc, 'work.assign.0.x', '{}');
    await expectDenied(leaseAggregate.nc, 'fanout.assign.x', '{}');
  });

  it('the router reads records and publishes work of every concern, and cannot pull work', async () => {
    const router = await connectAs('router');
    expect((await router.js.publish('work.assign.0.x', '{}')).stream).toBe(STREAMS.work);
    expect((await router.js.publish('fanout.assign.x', '{}')).stream).toBe(STREAMS.fanout);
    await expectDenied(router.nc, '$JS.API.CONSUMER.MSG.NEXT.WORK.handover-p0', '{}');
    await expectDenied(router.nc, 'hb.lease.ns.l', '{}');
  });

  it('a webhook-server replica reads its view and publishes nothing', async () => {
    const replica = await connectAs('webhook-server');
    const view = new ObjectView(REPLICA_VIEW_KINDS, log);
    await view.start(replica.js);
    view.stop();
    // It holds no Leases, so it reads no renewals.
    await expectDenied(replica.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.heartbeats}`, '{}');
    await expectDenied(replica.nc, 'k8s.crd._.x', '{}');
    await expectDenied(replica.nc, 'work.handover.0.x', '{}');
    await expectDenied(replica.nc, 'dlq.webhook-server', '{}');
    await expectDenied(replica.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.work}.mine`, '{}');
    // It may read a record of the history by sequence (what a lagging view fills a gap with),
    // and nothing of the router's consumer there.
    const recorded = await own.js.publish('k8s.crd._.history-probe', '{}');
    expect((await replica.jsm.streams.getMessage(STREAMS.records, { seq: recorded.seq }))?.subject).toBe(
      'k8s.crd._.history-probe',
    );
    for (const api of ['CREATE', 'DELETE', 'INFO', 'MSG.NEXT'])
      await expectDenied(replica.nc, `$JS.API.CONSUMER.${api}.${STREAMS.records}.router`, '{}');
    await expectDenied(replica.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.records}`, '{}');
  });

  it('a handler reads a target its view keeps projected whole again, by sequence or by subject', async () => {
    const name = 'projected.example.com';
    const subject = objectSubject({ kind: 'crd', namespace: '', name });
    const object = {
      metadata: { name, uid: 'uid-projected', resourceVersion: '1', generation: 1 },
      spec: { versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: {} } }] },
    };
    const recorded = await own.js.publish(
      subject,
      encodeMessage(objectEventSchema, {
        op: 'upsert',
        object,
        observedBy: 'watch',
        observedAt: new Date().toISOString(),
      }),
    );
    const handover = await connectAs('handover');
    const view = new ObjectView(HANDOVER_VIEW_KINDS, log, { project: HANDLER_VIEW_PROJECTIONS });
    await view.start(handover.js);
    try {
      await view.waitFor(recorded.seq);
      expect(view.get({ kind: 'crd', namespace: '', name })?.spec).toEqual({
        versions: [{ name: 'v1', served: true, storage: true }],
      });
      expect(await view.whole({ kind: 'crd', namespace: '', name })).toEqual(object);
    } finally {
      view.stop();
    }
    // The latest of a subject, once the history no longer has the record: a direct get of K8S_LATEST.
    expect((await handover.jsm.direct.getMessage(STREAMS.latest, { last_by_subj: subject }))?.seq).toBe(
      recorded.seq,
    );
    await expectDenied(handover.nc, `$JS.API.DIRECT.GET.${STREAMS.heartbeats}.hb.lease.ns.l`, '');
  });

  it('explain reads the handover view, renewals included, and publishes nothing', async () => {
    const explain = await connectAs('explain');
    const view = new ObjectView(HANDOVER_VIEW_KINDS, log);
    await view.start(explain.js);
    view.stop();
    await expectDenied(explain.nc, 'k8s.crd._.x', '{}');
    await expectDenied(explain.nc, 'work.handover.0.x', '{}');
    await expectDenied(explain.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.work}.mine`, '{}');
    await expectDenied(explain.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.decisions}`, '{}');
  });

  it('dlq reads and deletes dead letters and publishes work, and nothing else', async () => {
    const dead = await own.js.publish('dlq.config-status', '{"key":"x","seq":0}');
    const dlq = await connectAs('dlq');
    const info = await dlq.jsm.streams.info(STREAMS.deadLetters, { subjects_filter: 'dlq.>' });
    expect(info.state.last_seq).toBeGreaterThanOrEqual(dead.seq);
    expect((await dlq.jsm.streams.getMessage(STREAMS.deadLetters, { seq: dead.seq }))?.subject).toBe(
      'dlq.config-status',
    );
    // What `dlq list` reads with: the next message on a subject, no consumer.
    const next = { seq: 1, next_by_subj: 'dlq.config-status' } as unknown as { seq: number };
    expect((await dlq.jsm.streams.getMessage(STREAMS.deadLetters, next))?.seq).toBe(dead.seq);
    expect((await dlq.js.publish('work.config-status.0.x', '{"key":"x","seq":0}')).stream).toBe(STREAMS.work);
    expect(await dlq.jsm.streams.deleteMessage(STREAMS.deadLetters, dead.seq, false)).toBe(true);

    for (const subject of ['dlq.config-status', 'k8s.crd._.x', 'hb.lease.ns.l', 'recheck.config-status.0.x'])
      await expectDenied(dlq.nc, subject, '{}');
    await expectDenied(dlq.nc, 'fanout.assign.x', '{}');
    await expectDenied(dlq.nc, `$JS.API.STREAM.PURGE.${STREAMS.deadLetters}`);
    await expectDenied(dlq.nc, `$JS.API.STREAM.DELETE.${STREAMS.deadLetters}`);
    await expectDenied(dlq.nc, `$JS.API.STREAM.INFO.${STREAMS.work}`);
    await expectDenied(dlq.nc, `$JS.API.STREAM.MSG.GET.${STREAMS.work}`, '{"seq":1}');
    await expectDenied(dlq.nc, `$JS.API.STREAM.MSG.DELETE.${STREAMS.work}`, '{"seq":1}');
    await expectDenied(dlq.nc, `$JS.API.DIRECT.GET.${STREAMS.latest}`, '{"seq":1}');
    await expectDenied(dlq.nc, `$JS.API.CONSUMER.CREATE.${STREAMS.deadLetters}`, '{}');
    await expectDenied(dlq.nc, `$JS.API.CONSUMER.MSG.NEXT.${STREAMS.work}.config-status-p0`, '{}');
    await expectSubscribeDenied(dlq.nc, 'dlq.>');
    await expectSubscribeDenied(dlq.nc, '_INBOX.config-status.>');
  });

  it('refuses a wrong password and an unknown user', async () => {
    for (const [user, pass] of [
      ['handover', 'not-its-password'],
      ['nobody', 'x'],
    ] as const) {
      const err = await connect({ servers: own.server.url, user, pass, reconnect: false }).then(
        async (nc) => {
          await nc.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(String(err)).toMatch(/authorization/i);
    }
  });
});
