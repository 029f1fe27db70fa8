// The one way work is published: every concern's subject, payload and message id, pinned to the
// scheme the consumers, the duplicate window and `dlq`/`replay` rely on, and the paced path.
import { describe, expect, it } from 'vitest';
import { handoverWorkSchema } from '../bus/messages.ts';
import { partitionOf } from '../bus/runtime/index.ts';
import { ASSIGN_WORK } from './assign/wakes.ts';
import { CONCERNS } from './concerns.ts';
import { CONFIG_STATUS_WORK } from './config-status/wakes.ts';
import { enqueueWork, workIdPrefix } from './enqueue-work.ts';
import { HANDOVER_WORK } from './handover/wakes.ts';
import { INSTANCES_WORK } from './instances/wakes.ts';
import { LEASE_AGGREGATE_WORK } from './lease-aggregate/wakes.ts';

interface Published {
  subject: string;
  data: unknown;
  msgID: string | undefined;
}

function recordingJs() {
  const published: Published[] = [];
  const js = {
    publish: async (subject: string, data?: unknown, opts?: { msgID?: string }) => {
      const text = typeof data === 'string' ? data : new TextDecoder().decode(data as Uint8Array);
      published.push({ subject, data: JSON.parse(text), msgID: opts?.msgID });
      return { seq: published.length, duplicate: false, stream: 'S', domain: '' };
    },
  };
  return { js: js as Parameters<typeof enqueueWork>[0], published };
}

describe('enqueueWork', () => {
  it.each([
    [ASSIGN_WORK, 'crdconfig/widgets', ['crdconfig', 'widgets'], 'work.assign'],
    [CONFIG_STATUS_WORK, 'xrdconfig/gadgets', ['xrdconfig', 'gadgets'], 'work.config-status'],
    [LEASE_AGGREGATE_WORK, 'cluster-a', ['cluster-a'], 'work.lease-aggregate'],
    [INSTANCES_WORK, 'cluster-a', ['cluster-a'], 'work.instances'],
    [HANDOVER_WORK, 'widgets.example.org', ['widgets_2eexample_2eorg'], 'work.handover'],
  ])('publishes %s work for a key on its partition, with the id <concern>:<cause seq>:<key>', async (work, key, tokens, prefix) => {
    const { js, published } = recordingJs();
    await enqueueWork(js, work, 16, { key, causeSeq: 42 });
    expect(published).toEqual([
      {
        subject: `${prefix}.${partitionOf(tokens, 16)}.${tokens.join('.')}`,
        data: { key, seq: 42 },
        msgID: `${work.concern}:42:${key}`,
      },
    ]);
  });

  it('names a cause besides the record in the id, so it does not shadow the plain work of the same record', async () => {
    const { js, published } = recordingJs();
    await enqueueWork(js, HANDOVER_WORK, 64, {
      key: 't.x.io',
      causeSeq: 7,
      cause: 'trust',
      fields: { trust: true },
    });
    await enqueueWork(js, ASSIGN_WORK, 16, { key: 'webhookserver/a', causeSeq: 7, cause: 'echo' });
    expect(published.map((p) => p.msgID)).toEqual([
      'handover-trust:7:t.x.io',
      'assign-echo:7:webhookserver/a',
    ]);
    expect(published[0]?.data).toEqual({ key: 't.x.io', seq: 7, trust: true });
    expect(workIdPrefix(ASSIGN_WORK, 'echo')).toBe('assign-echo');
  });

  it("carries a move's fields to the handover, checked by its schema", async () => {
    const { js, published } = recordingJs();
    const fields = { config: 'CRDConversionConfig/w', from: 'a', to: 'b' };
    await enqueueWork(js, HANDOVER_WORK, 64, { key: 'w.x.io', causeSeq: 3, fields });
    expect(handoverWorkSchema.parse(published[0]?.data)).toEqual({ key: 'w.x.io', seq: 3, ...fields });
    await expect(
      enqueueWork(js, HANDOVER_WORK, 64, { key: 'w.x.io', causeSeq: 3, fields: { from: '' } }),
    ).rejects.toThrow();
    expect(published).toHaveLength(1);
  });

  it('sends paced work to the concern fan-out, carrying the work subject and id to its release', async () => {
    const { js, published } = recordingJs();
    await enqueueWork(js, ASSIGN_WORK, 16, { key: 'crdconfig/widgets', causeSeq: 9, paced: true });
    expect(published).toEqual([
      {
        subject: 'fanout.assign.crdconfig.widgets',
        data: {
          subject: ASSIGN_WORK.workSubject('crdconfig/widgets', 16),
          payload: { key: 'crdconfig/widgets', seq: 9 },
          msgId: 'assign:9:crdconfig/widgets',
        },
        msgID: 'fanout:assign:9:crdconfig/widgets',
      },
    ]);
  });

  it('refuses to pace work for a concern without a fan-out, publishing nothing', async () => {
    const { js, published } = recordingJs();
    await expect(enqueueWork(js, HANDOVER_WORK, 64, { key: 't', causeSeq: 1, paced: true })).rejects.toThrow(
      'handover has no paced fan-out',
    );
    expect(published).toEqual([]);
  });

  it('registers every concern once, each with its own partition count', () => {
    const names = CONCERNS.map((c) => c.concern);
    expect(new Set(names).size).toBe(names.length);
    expect(names.sort()).toEqual(['assign', 'config-status', 'handover', 'instances', 'lease-aggregate']);
    expect(new Set(CONCERNS.map((c) => c.partitionsOf)).size).toBe(CONCERNS.length);
  });
});
