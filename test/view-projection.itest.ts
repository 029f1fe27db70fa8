// A view that keeps targets projected (views/projection.ts) on a JetStream of the test's own: it
// holds only the declared fields, and reads an object whole again from the bus, the very record it
// projected (by its sequence in K8S), or, once the history no longer has that record, the latest
// of its subject (K8S_LATEST, which a purge of K8S does not touch).
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMessage, objectEventSchema, type RecordedObject } from '../src/bus/messages.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { ObjectView } from '../src/bus/view.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { HANDLER_VIEW_PROJECTIONS } from '../src/views/projection.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';

const log = pino({ level: 'warn' });
let bus: OwnBus;

beforeAll(async () => {
  bus = await startOwnBus();
}, 60_000);

afterAll(async () => {
  await bus?.stop();
});

function crd(name: string, resourceVersion: string, description: string): RecordedObject {
  const schema = {
    openAPIV3Schema: { type: 'object', description, properties: { spec: { type: 'object' } } },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion,
      generation: Number(resourceVersion),
      labels: { a: 'b' },
    },
    spec: {
      group: 'example.com',
      names: { kind: 'Widget', plural: 'widgets' },
      conversion: { strategy: 'None' },
      versions: [
        { name: 'v1', served: true, storage: false, schema },
        { name: 'v2', served: true, storage: true, schema },
      ],
    },
    status: {
      storedVersions: ['v1', 'v2'],
      conditions: [
        {
          type: 'Established',
          status: 'True',
          reason: 'InitialNamesAccepted',
          message: 'the initial names have been accepted',
          lastTransitionTime: '2026-01-01T00:00:00Z',
        },
      ],
    },
  };
}

async function record(object: RecordedObject): Promise<number> {
  const payload = encodeMessage(objectEventSchema, {
    op: 'upsert',
    object,
    observedBy: 'watch',
    observedAt: new Date().toISOString(),
  });
  const subject = objectSubject({ kind: 'crd', namespace: '', name: object.metadata.name });
  return (await bus.js.publish(subject, payload)).seq;
}

describe('a projected view', () => {
  it('holds only the declared fields of a target and reads the target whole again from the bus', async () => {
    const name = 'widgets.example.com';
    const first = await record(crd(name, '1', 'first'));
    const view = new ObjectView(['crd'], log, { project: HANDLER_VIEW_PROJECTIONS });
    await view.start(bus.js);
    try {
      await view.waitFor(first);
      const key = { kind: 'crd', namespace: '', name };
      const held = view.record(key);
      expect(held?.projected).toBe(true);
      expect(held?.object).toEqual({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name, uid: `uid-${name}`, resourceVersion: '1', generation: 1 },
        spec: {
          group: 'example.com',
          conversion: { strategy: 'None' },
          versions: [
            { name: 'v1', served: true, storage: false },
            { name: 'v2', served: true, storage: true },
          ],
        },
        // Whether it is Established (a first apply waits for it), and nothing else of its status.
        status: { conditions: [{ type: 'Established', status: 'True' }] },
      });
      expect(await view.whole(key)).toEqual(crd(name, '1', 'first'));

      // A second record: the view projects it too, and `whole` reads exactly the one it holds.
      const second = await record(crd(name, '2', 'second'));
      await view.waitFor(second);
      expect(view.get(key)?.metadata.resourceVersion).toBe('2');
      expect(await view.whole(key)).toEqual(crd(name, '2', 'second'));

      // The history loses the record (its retention, here a purge): the latest of the subject stands in.
      await bus.jsm.streams.purge(STREAMS.records, { filter: objectSubject(key) });
      expect(await bus.jsm.streams.getMessage(STREAMS.records, { seq: second })).toBeNull();
      const latest = await waitFor(
        'K8S_LATEST to keep the purged record',
        async () =>
          (await bus.jsm.direct.getMessage(STREAMS.latest, { last_by_subj: objectSubject(key) })) ??
          undefined,
      );
      expect(latest.seq).toBe(second);
      expect(await view.whole(key)).toEqual(crd(name, '2', 'second'));
      expect(await view.whole({ ...key, name: 'absent.example.com' })).toBeUndefined();
    } finally {
      view.stop();
    }
  });

  it('keeps a kind it declares no fields for whole', async () => {
    const name = 'gadgets.example.com';
    const seq = await record(crd(name, '1', 'whole'));
    const view = new ObjectView(['crd'], log);
    await view.start(bus.js);
    try {
      await view.waitFor(seq);
      const held = view.record({ kind: 'crd', namespace: '', name });
      expect(held?.projected).toBeUndefined();
      expect(held?.object).toEqual(crd(name, '1', 'whole'));
    } finally {
      view.stop();
    }
  });
});
