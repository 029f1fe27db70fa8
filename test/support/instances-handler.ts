import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type WorkItem, workItemSchema } from '../../src/bus/messages.ts';
import { type Handler, startHandlerRuntime } from '../../src/bus/runtime/index.ts';
import { ObjectView } from '../../src/bus/view.ts';
import { defaultConfig } from '../../src/config/schema.ts';
import { AppliedRenderings } from '../../src/handlers/instances/applied-renderings.ts';
import { NatsCaFile } from '../../src/handlers/instances/nats-ca.ts';
import { secretReader } from '../../src/handlers/instances/secrets.ts';
import { INSTANCES_WORK } from '../../src/handlers/instances/wakes.ts';
import { INSTANCES, INSTANCES_VIEW_KINDS, instancesHandler } from '../../src/handlers/instances.ts';
import { createKubeClients } from '../../src/kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../../src/kube/writer.ts';
import type { LocalClusterInfo } from '../../src/local-cluster/cluster.ts';
import { systemClock } from '../../src/runtime/clock.ts';
import { x509Issuer } from '../../src/tls/x509-issuer.ts';
import { CONFIG_SUBJECT_VIEW_PROJECTIONS } from '../../src/views/projection.ts';
import type { OwnBus } from './bus.ts';
import { componentIdentity, HANDOVER_ACCOUNT } from './identities.ts';

/**
 * The instances handler on the test's bus, as `switchyard instances` runs it: its own view,
 * the ServiceAccount of deploy/rbac/instances.yaml, the x509 issuer. `replicaEnv` is what every
 * rendered replica gets as environment (its bus address); `wrap` sees each run. Resolves to a
 * function that stops it.
 */
export async function startInstancesHandler(
  cluster: LocalClusterInfo,
  admin: KubeConfig,
  bus: OwnBus,
  opts: {
    partitions: number;
    log: Logger;
    replicaEnv: Record<string, string>;
    wrap?: (handler: Handler<WorkItem>) => Handler<WorkItem>;
    /** What the handler applied lately: a test that forgets an instance in it plays the re-apply period out. */
    applied?: AppliedRenderings;
    /** `nats.tls.caFile`: the CA the handler carries into each instance's NATS Secret, re-read at every wake. */
    natsCaFile?: string;
  },
): Promise<() => Promise<void>> {
  const view = new ObjectView(INSTANCES_VIEW_KINDS, opts.log, { project: CONFIG_SUBJECT_VIEW_PROJECTIONS });
  await view.start(bus.js);
  const clients = createKubeClients({
    kubeConfig: await componentIdentity(cluster, admin, INSTANCES),
    component: 'instances-itest',
    kubernetes: defaultConfig().kubernetes,
  });
  const natsCa = new NatsCaFile(opts.natsCaFile ?? '', opts.log);
  const handler = instancesHandler({
    view,
    writer: new KubeWriter(clients.writes, fieldManagerFor(INSTANCES)),
    handover: { js: bus.js, partitions: opts.partitions },
    applied: opts.applied ?? new AppliedRenderings(),
    secrets: secretReader(clients.writes),
    issuer: x509Issuer(),
    clock: systemClock,
    settings: () => ({
      defaultNamespace: 'unused',
      image: { repository: 'switchyard', tag: 'dev' },
      env: opts.replicaEnv,
      handoverServiceAccount: HANDOVER_ACCOUNT,
      natsCaPem: natsCa.current(),
    }),
  });
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: INSTANCES,
    log: opts.log,
    consumers: INSTANCES_WORK.consumers(opts.partitions),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${INSTANCES}`,
    handle: opts.wrap ? opts.wrap(handler) : handler,
  });
  return async () => {
    await runtime.stop();
    view.stop();
    await clients.close();
  };
}
