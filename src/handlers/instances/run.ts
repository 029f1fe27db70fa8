import { readFileSync } from 'node:fs';
import { systemClock } from '../../runtime/clock.ts';
import { x509Issuer } from '../../tls/x509-issuer.ts';
import { CONFIG_SUBJECT_VIEW_PROJECTIONS } from '../../views/projection.ts';
import { INSTANCES_VIEW_KINDS, instancesHandler } from '../instances.ts';
import { handoverServiceAccount, operatorNamespace } from '../operator-namespace.ts';
import { runHandlerProcess } from '../run-handler.ts';
import { AppliedRenderings } from './applied-renderings.ts';
import { NatsCaFile } from './nats-ca.ts';
import { projectImage } from './project-image.ts';
import { secretReader } from './secrets.ts';
import { INSTANCES_WORK } from './wakes.ts';

/**
 * `switchyard instances`: replicas may run side by side; any one may be killed at any moment
 * (the runtime redelivers). The replicas it renders reach the bus at the same URL as this
 * process.
 */
export function runInstances(argv: string[]): Promise<void> {
  return runHandlerProcess(argv, {
    work: INSTANCES_WORK,
    viewKinds: INSTANCES_VIEW_KINDS,
    projections: CONFIG_SUBJECT_VIEW_PROJECTIONS,
    handler: ({ config, log, view, writer, clients, bus }) => {
      const settings = {
        defaultNamespace: operatorNamespace(),
        image: projectImage(),
        env: { SWITCHYARD_NATS_URL: config.nats.url },
        handoverServiceAccount: handoverServiceAccount(),
        natsPassword: readPasswordFile(config.nats.webhookServerPasswordFile),
      };
      // The CA this handler trusts for NATS, carried to the replicas: re-read at every wake.
      const natsCa = new NatsCaFile(config.nats.tls.caFile, log);
      return instancesHandler({
        view,
        writer,
        secrets: secretReader(clients.writes),
        issuer: x509Issuer(),
        clock: systemClock,
        handover: { js: bus.js, partitions: config.bus.partitions.handover },
        applied: new AppliedRenderings(),
        settings: () => ({ ...settings, natsCaPem: natsCa.current() }),
      });
    },
    running: 'reconciling instances',
  });
}

/** The replicas' NATS password, when the bus has users; a configured file that cannot be read stops the start. */
function readPasswordFile(file: string): string | undefined {
  return file === '' ? undefined : readFileSync(file, 'utf8').trim();
}
