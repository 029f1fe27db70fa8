import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml, type V1Container, type V1PodSpec } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planHandlerConsumers } from '../bus/runtime/index.ts';
import { subjectMatches } from '../bus/subjects.ts';
import { configSchema, defaultConfig } from '../config/schema.ts';
import { HANDOVER_WORK } from '../handlers/handover/wakes.ts';
import { resyncPacerOf } from '../handlers/resync.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { passwordVariable, renderAuthorization } from './nats-authorization.ts';
import {
  NATS_IDENTITIES,
  NATS_OPERATOR_IDENTITIES,
  type NatsIdentity,
  natsIdentityOf,
  natsPermissions,
} from './nats-permissions.ts';

function mayPublish(identity: NatsIdentity, subject: string, config = defaultConfig()): boolean {
  return natsPermissions(identity, config).publish.some((p) => subjectMatches(p, subject));
}

const HANDLERS = ['assign', 'lease-aggregate', 'handover', 'config-status', 'instances'] as const;

describe('natsPermissions', () => {
  it('lets watchers publish records and heartbeats, and nobody else publish heartbeats', () => {
    expect(mayPublish('watchers', 'k8s.crd._.widgets_2eexample_2ecom')).toBe(true);
    expect(mayPublish('watchers', 'hb.lease.ns.name')).toBe(true);
    for (const id of NATS_IDENTITIES.filter((i) => i !== 'watchers'))
      expect(mayPublish(id, 'hb.lease.ns.name'), id).toBe(false);
  });

  it('lets no handler publish a record, and no watcher or replica touch work', () => {
    for (const id of [...HANDLERS, 'webhook-server', 'bus-setup'] as const)
      expect(mayPublish(id, 'k8s.crd._.x'), id).toBe(false);
    for (const id of ['watchers', 'webhook-server'] as const) {
      expect(mayPublish(id, 'work.handover.0.x'), id).toBe(false);
      expect(mayPublish(id, '$JS.API.CONSUMER.MSG.NEXT.WORK.handover-p0'), id).toBe(false);
      expect(mayPublish(id, '$JS.ACK.WORK.handover-p0.1.2.3.4.5'), id).toBe(false);
    }
  });

  it('lets every user subscribe only under its own inbox', () => {
    for (const id of NATS_IDENTITIES)
      expect(natsPermissions(id, defaultConfig()).subscribe).toEqual([`_INBOX.${id}.>`]);
  });

  it('follows the partition count: a concern pulls exactly its own consumers, whatever their number', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), (partitions) => {
        const config = configSchema.parse({ bus: { partitions: { handover: partitions } } });
        const allowed = (id: NatsIdentity) => natsPermissions(id, config).publish;
        const handover = allowed('handover');
        const others = HANDLERS.filter((h) => h !== 'handover').flatMap(allowed);
        const may = (patterns: string[], subject: string) => patterns.some((p) => subjectMatches(p, subject));
        for (const c of planHandlerConsumers(HANDOVER_WORK.consumers(partitions))) {
          const next = `$JS.API.CONSUMER.MSG.NEXT.${c.stream}.${c.name}`;
          if (!may(handover, next) || may(others, next)) return false;
        }
        return !may(handover, `$JS.API.CONSUMER.MSG.NEXT.WORK.handover-p${partitions}`);
      }),
      { numRuns: 25 },
    );
    // Each run matches every consumer against every other handler's grants: seconds on a busy machine.
  }, 60_000);

  it('lets each handler run its own resync (publish the round, pace it, use its bucket) and no other’s', () => {
    for (const concern of HANDLERS) {
      const pacer = resyncPacerOf(concern);
      const own = [
        pacer.filterSubject,
        `$JS.API.CONSUMER.MSG.NEXT.FANOUT.${pacer.durable}`,
        `$JS.API.CONSUMER.INFO.FANOUT.${pacer.durable}`,
        `$JS.ACK.FANOUT.${pacer.durable}.1.2.3.4.5`,
        `$KV.${pacer.bucket}.slot.1`,
        `$JS.API.STREAM.CREATE.KV_${pacer.bucket}`,
        pacer.deadLetterSubject,
      ];
      for (const subject of own) {
        expect(mayPublish(concern, subject), `${concern}: ${subject}`).toBe(true);
        for (const other of HANDLERS.filter((h) => h !== concern))
          expect(mayPublish(other, subject), `${other}: ${subject}`).toBe(false);
      }
      expect(mayPublish('router', pacer.filterSubject)).toBe(false);
    }
  });

  it('lets dlq read and delete dead letters and publish work, and nothing else', () => {
    const { publish } = natsPermissions('dlq', defaultConfig());
    expect(publish).toEqual([
      '$JS.API.INFO',
      '$JS.API.STREAM.INFO.DLQ',
      '$JS.API.STREAM.MSG.GET.DLQ',
      '$JS.API.STREAM.MSG.DELETE.DLQ',
      'work.>',
    ]);
    expect(mayPublish('dlq', 'work.handover.3.widgets_2eexample_2ecom')).toBe(true);
    for (const subject of [
      'dlq.handover',
      'k8s.crd._.x',
      'hb.lease.ns.l',
      'recheck.handover.0.x',
      'fanout.assign.x',
      '$JS.API.STREAM.PURGE.DLQ',
      '$JS.API.STREAM.DELETE.DLQ',
      '$JS.API.STREAM.MSG.DELETE.WORK',
      '$JS.API.STREAM.MSG.GET.WORK',
      '$JS.API.DIRECT.GET.K8S_LATEST',
      '$JS.API.CONSUMER.CREATE.DLQ',
      '$JS.API.CONSUMER.MSG.NEXT.WORK.handover-p0',
      '$JS.ACK.WORK.handover-p0.1.2.3.4.5',
    ])
      expect(mayPublish('dlq', subject), subject).toBe(false);
  });

  it('names the user of each subcommand that connects to the bus', () => {
    expect(natsIdentityOf(['watch'])).toBe('watchers');
    expect(natsIdentityOf(['bus', 'setup'])).toBe('bus-setup');
    expect(natsIdentityOf(['bus', 'stats', '-o', 'json'])).toBe('bus-setup');
    expect(() => natsIdentityOf(['bus', 'authorization'])).toThrow(/no NATS user/);
    expect(natsIdentityOf(['handover', '--x=1'])).toBe('handover');
    expect(natsIdentityOf(['dlq', 'retry', '--all'])).toBe('dlq');
    expect(() => natsIdentityOf(['admission'])).toThrow(/no NATS user/);
  });
});

describe('deploy/ carries the same users', () => {
  const read = (path: string) => readFileSync(join(PROJECT_ROOT, path), 'utf8');

  it('deploy/nats/authorization.conf is the rendered block (run `node scripts/gen-nats-authorization.ts`)', () => {
    expect(read('deploy/nats/authorization.conf')).toBe(renderAuthorization({ config: defaultConfig() }));
  });

  it('the NATS server gets every user’s password from its key of the credentials Secret', () => {
    const objects = loadAllYaml(read('deploy/nats/nats.yaml')) as {
      kind: string;
      spec?: { template?: { spec?: V1PodSpec } };
    }[];
    const env = objects.find((o) => o.kind === 'StatefulSet')?.spec?.template?.spec?.containers[0]?.env ?? [];
    for (const id of NATS_IDENTITIES) {
      const entry = env.find((e) => e.name === passwordVariable(id));
      expect(entry?.valueFrom?.secretKeyRef, id).toEqual({ name: 'switchyard-nats-credentials', key: id });
    }
  });

  it('every worker connects as its own user with its own key mounted', () => {
    // deploy/workers/<user>.yaml for every user but the replicas the instances handler renders
    // and the operator's commands (`dlq`), which no Pod runs.
    const workers = NATS_IDENTITIES.filter(
      (id) => id !== 'webhook-server' && !NATS_OPERATOR_IDENTITIES.includes(id),
    );
    for (const file of workers) {
      const [workload] = loadAllYaml(read(`deploy/workers/${file}.yaml`)) as {
        spec: { template: { spec: V1PodSpec } };
      }[];
      const pod = workload?.spec.template.spec;
      const container = pod?.containers[0] as V1Container;
      const user = container.env?.find((e) => e.name === 'SWITCHYARD_NATS_USER')?.value;
      expect(user, file).toBe(natsIdentityOf(container.args ?? []));
      const items = pod?.volumes?.find((v) => v.name === 'nats-credentials')?.secret?.items ?? [];
      expect(items.map((i) => i.key)).toContain(user);
      expect(container.env?.find((e) => e.name === 'SWITCHYARD_NATS_PASSWORD_FILE')?.value).toBe(
        `/etc/switchyard/nats/${user}`,
      );
    }
  });
});
