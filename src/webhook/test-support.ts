// Fixtures shared by the webhook-server's unit tests: the gizmo target and its FieldRename
// config (test/support/crds.ts) as the records the bus would hold.

import { createHash } from 'node:crypto';
import { gizmoCrd, renameConfigSpec } from '../../test/support/crds.ts';
import { API_VERSION } from '../api/constants.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { SourceOf } from './plans.ts';

/** As the apiserver returns an object: a new generation for every change of its spec. */
const recorded = (name: string, generation = 1) => ({
  name,
  uid: `u-${name}`,
  generation,
  resourceVersion: String(Math.random()),
});

/** The target `name` (`<plural>.<group>`); `service` is what its conversion names, `v1Field` v1's field. */
export function gizmoTarget(name: string, opts: { service?: string; v1Field?: string } = {}) {
  const crd = gizmoCrd(name, opts);
  const spec = {
    ...crd.spec,
    conversion: opts.service
      ? {
          strategy: 'Webhook',
          webhook: { clientConfig: { service: { name: opts.service, namespace: 'ns' } } },
        }
      : { strategy: 'None' },
  };
  return { ...crd, metadata: recorded(name, generationOf(spec)), spec };
}

/** A generation that differs whenever the spec does, as the apiserver's would (by content here, not by count). */
function generationOf(spec: object): number {
  return createHash('sha256').update(JSON.stringify(spec)).digest().readUInt32BE(0);
}

/** What a replica reads whole from the bus, when its world holds the objects whole already (these fixtures). */
export const fromWorld: SourceOf = (_target, want) => ({
  kind: 'read',
  config: want.config,
  target: want.live as RecordedObject,
});

/** A CRDConversionConfig of `target` as recorded, pinned when `pin` is given. */
export function renameConfig(
  name: string,
  target: string,
  opts: {
    pin?: string;
    spokePath?: string;
    status?: object;
    generation?: number;
    driftPolicy?: 'KeepServingStale' | 'FailClosed';
  } = {},
) {
  return {
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: recorded(name, opts.generation),
    spec: renameConfigSpec(target, opts),
    ...(opts.status && { status: opts.status }),
  };
}
