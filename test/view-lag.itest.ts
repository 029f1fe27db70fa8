// A view on a NATS server of the test's own, frozen and restarted: it must say when it is behind
// the bus or cannot tell, refuse to let a decision through meanwhile, and be current again soon
// after the server is back (after a NATS restart a replica's view once stalled for ~40 s without
// noticing: shared/notes/what-a-nats-restart-does-today.md). Here and not in src/bus: freezing
// the server needs it as a process, and src/bus also runs against NATS in a container.
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followLatest } from '../src/bus/follow-latest.ts';
import { encodeMessage, objectEventSchema } from '../src/bus/messages.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { ObjectView } from '../src/bus/view.ts';
import { ViewBehindError } from '../src/bus/view-lag.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';

const log = pino({ level: 'warn' });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LAG = { checkEveryMs: 200, maxLagMs: 800, restartAfterMs: 3_000 };
let bus: OwnBus;

beforeAll(async () => {
  bus = await startOwnBus();
}, 60_000);

afterAll(async () => {
  await bus?.stop();
});

let counter = 0;
/** Records an object; sent again (stored once: the same message id) when a restarting server lost the request. */
async function record(name: string): Promise<number> {
  counter++;
  const payload = encodeMessage(objectEventSchema, {
    op: 'upsert',
    object: { metadata: { name, uid: `uid-${name}`, resourceVersion: String(counter) } },
    observedBy: 'watch',
    observedAt: new Date().toISOString(),
  });
  const msgID = `view-lag-${name}-${counter}`;
  return waitFor(
    `the record of ${name} stored`,
    () =>
      bus.js
        .publish(objectSubject({ kind: 'crdconfig', namespace: '', name }), payload, {
          msgID,
          timeout: 2_000,
        })
        .then((ack) => ack.seq)
        .catch(() => undefined),
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

describe('a view knows how far behind the bus it is', () => {
  it('is current once it holds what the bus holds, cannot tell while NATS is frozen, and lets no decision through', {
    timeout: 60_000,
  }, async () => {
    const view = new ObjectView(['crdconfig'], log, { lag: LAG });
    const seq = await record('first');
    await view.start(bus.js);
    try {
      await view.waitFor(seq, 5_000);
      expect(view.freshness().state).toBe('current');

      bus.server.freeze();
      try {
        const unknown = await waitFor(
          'the view to say it cannot tell',
          () => (view.freshness().state === 'unknown' ? view.freshness() : undefined),
          { timeoutMs: 10_000, intervalMs: 50 },
        );
        expect(unknown.reason).toContain('the bus did not answer');
        const decision = view.waitFor(seq, 500);
        await expect(decision, 'nothing decides on a view that cannot tell').rejects.toBeInstanceOf(
          ViewBehindError,
        );
        // Frozen past the client's own request timeout (5 s): the questions the view gave up on
        // fail late, and must not end the process (an unhandled rejection fails this file).
        await sleep(6_500);
        expect(view.freshness().state).toBe('unknown');
      } finally {
        bus.server.thaw();
      }
      const next = await record('second');
      await view.waitFor(next, 10_000);
      expect(view.get({ kind: 'crdconfig', namespace: '', name: 'second' })).toBeDefined();
      expect(view.freshness().state).toBe('current');
    } finally {
      view.stop();
    }
  });

  it('cannot tell while nats-server is down, and is current again right after it is started again', {
    timeout: 60_000,
  }, async () => {
    const view = new ObjectView(['crdconfig'], log, { lag: LAG });
    await view.start(bus.js);
    try {
      await bus.server.stop({ kill: true });
      await waitFor('the view to say it cannot tell', () =>
        view.freshness().state === 'unknown' ? true : undefined,
      );
      const restartedAt = performance.now();
      await bus.server.launch();
      const seq = await record('after-restart');
      await view.waitFor(seq, 20_000);
      const seconds = (performance.now() - restartedAt) / 1000;
      process.stdout.write(
        `[view] current with a record made after the restart ${seconds.toFixed(1)} s after it\n`,
      );
      expect(view.get({ kind: 'crdconfig', namespace: '', name: 'after-restart' })).toBeDefined();
      expect(view.freshness().state).toBe('current');
    } finally {
      view.stop();
    }
  });

  it('a follower restarted by hand resumes after the last message it handed over, never twice', {
    timeout: 30_000,
  }, async () => {
    const seen: number[] = [];
    const follower = await followLatest({
      js: bus.js,
      stream: STREAMS.latest,
      filters: ['k8s.crdconfig.>'],
      onMessage: (m) => seen.push(m.seq),
      log,
    });
    try {
      await follower.caughtUp;
      const before = await record('before-restart');
      await waitFor('the record before', () => (follower.handedSeq >= before ? true : undefined));
      await follower.restart();
      const after = await record('after-follower-restart');
      await waitFor('the record after', () => (follower.handedSeq >= after ? true : undefined));
      expect(new Set(seen).size, 'no message handed over twice').toBe(seen.length);
      expect(
        [...seen].sort((a, b) => a - b),
        'in stream order',
      ).toEqual(seen);
      expect(seen).toContain(after);
    } finally {
      follower.stop();
    }
  });

  it('vouches for a sequence only once it holds the record that replaced one it skipped', {
    timeout: 30_000,
  }, async () => {
    // x, y, then x again: the mirror keeps y and the second x, so a reader meets y first, with
    // the first x gone. Holding y, it must not claim y's sequence: its x is older than x at y.
    const first = await record('settle-x');
    const y = await record('settle-y');
    const replacing = await record('settle-x');
    expect(first).toBeLessThan(y);
    const handed: { seq: number; settled: number }[] = [];
    const follower = await followLatest({
      js: bus.js,
      stream: STREAMS.latest,
      filters: ['k8s.crdconfig._.settle-x', 'k8s.crdconfig._.settle-y'],
      onMessage: (m, settled) => handed.push({ seq: m.seq, settled }),
      log,
    });
    try {
      // The mirror copies K8S a moment later: the follower may be caught up before it holds them.
      await waitFor('the replacing x handed', () => (follower.handedSeq >= replacing ? true : undefined));
      expect(handed.map((h) => h.seq)).toEqual([y, replacing]);
      expect(handed[0]?.settled, 'y handed while the x that replaced the first is not').toBeLessThan(y);
      expect(handed[1]?.settled, 'every record held once the replacing x is').toBe(replacing);
      expect(follower.settledSeq).toBe(replacing);
    } finally {
      follower.stop();
    }
  });

  it('fills what it skipped while behind from the history, and vouches for every message it handed', {
    timeout: 60_000,
  }, async () => {
    // A reader cut off (its connection delivers nothing) while x, y and x again are written:
    // the mirror drops the first x before the reader gets there. Its consumer is recreated
    // after the last message it took, as a view does when it stalls.
    const proxy = await pausableProxy(new URL(bus.server.url).port);
    const nc = await connect({ servers: `nats://127.0.0.1:${proxy.port}` });
    const filters = ['k8s.crdconfig._.hist-x', 'k8s.crdconfig._.hist-y'];
    const follow = async (history: string | undefined) => {
      const handed: { subject: string; seq: number; settled: number }[] = [];
      const follower = await followLatest({
        js: jetstream(nc),
        stream: STREAMS.latest,
        filters,
        history,
        onMessage: (m, settled) => handed.push({ subject: m.subject, seq: m.seq, settled }),
        log,
      });
      return { follower, handed };
    };
    const withHistory = await follow(STREAMS.records);
    const without = await follow(undefined);
    // A history that cannot answer (here: no such stream) leaves the reader where it would be
    // without one: the gap waits, nothing is handed twice or lost.
    const unreadable = await follow('NO_SUCH_STREAM');
    try {
      await Promise.all([withHistory, without, unreadable].map((r) => r.follower.caughtUp));
      proxy.pause();
      const firstX = await record('hist-x');
      const y = await record('hist-y');
      const replacingX = await record('hist-x');
      await waitFor('the mirror to have dropped the first x', async () => {
        const info = await bus.jsm.streams.info(STREAMS.latest);
        return info.state.last_seq >= replacingX ? true : undefined;
      });
      const restarted = Promise.all([withHistory, without, unreadable].map((r) => r.follower.restart()));
      proxy.resume();
      await restarted;
      for (const reader of [withHistory, without, unreadable])
        await waitFor('the replacing x handed', () =>
          reader.follower.handedSeq >= replacingX ? true : undefined,
        );

      const ofX = (h: { subject: string }) => h.subject.endsWith('.hist-x');
      expect(
        without.handed.filter(ofX).map((h) => h.seq),
        'the mirror alone lost the first x',
      ).toEqual([replacingX]);
      expect(
        without.handed.find((h) => h.seq === y)?.settled,
        'without the history, y is not vouched for',
      ).toBeLessThan(y);

      expect(
        withHistory.handed.map((h) => h.seq),
        'with the history: both versions of x and y, in stream order, once each',
      ).toEqual([firstX, y, replacingX]);
      expect(
        withHistory.handed.map((h) => h.settled),
        'each vouched for as it is handed',
      ).toEqual([firstX, y, replacingX]);
      expect(withHistory.follower.settledSeq).toBe(replacingX);

      expect(unreadable.handed.map((h) => h.seq)).toEqual(without.handed.map((h) => h.seq));
      expect(unreadable.handed.map((h) => h.settled)).toEqual(without.handed.map((h) => h.settled));
    } finally {
      withHistory.follower.stop();
      without.follower.stop();
      unreadable.follower.stop();
      await nc.close();
      await proxy.close();
    }
  });
});

/** A TCP proxy to the server whose deliveries to the client can be held back, and then let through in order. */
async function pausableProxy(upstreamPort: string) {
  const links = new Set<{ client: Socket; held: Buffer[] }>();
  let paused = false;
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(Number(upstreamPort), '127.0.0.1');
    const link = { client, held: [] as Buffer[] };
    links.add(link);
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (paused) link.held.push(chunk);
      else client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      links.delete(link);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no port');
  return {
    port: address.port,
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      for (const link of links) for (const chunk of link.held.splice(0)) link.client.write(chunk);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
