// Fixtures shared by the webhook-server's unit tests: a two-version target whose v2 (storage)
// says spec.size and v1 says spec.replicas, and a config renaming one into the other, as the
// records the bus would hold.
import { API_VERSION } from '../api/constants.ts';

/** The target `name` (`<plural>.<group>`); `service` is what its conversion names, `v1Field` v1's field. */
export function gizmoTarget(name: string, opts: { service?: string; v1Field?: string } = {}) {
  const version = (v: string, field: string, storage: boolean) => ({
    name: v,
    served: true,
    storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } },
      },
    },
  });
  return {
    metadata: { name, uid: `u-${name}`, resourceVersion: String(Math.random()) },
    spec: {
      group: name.split('.').slice(1).join('.'),
      versions: [version('v2', 'size', true), version('v1', opts.v1Field ?? 'replicas', false)],
      conversion: opts.service
        ? {
            strategy: 'Webhook',
            webhook: { clientConfig: { service: { name: opts.service, namespace: 'ns' } } },
          }
        : { strategy: 'None' },
    },
  };
}

/** A CRDConversionConfig of `target`, v1's spokePath renamed to v2's spec.size, pinned when `pin` is given. */
export function renameConfig(
  name: string,
  target: string,
  opts: { pin?: string; spokePath?: string; status?: object } = {},
) {
  return {
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: { name, uid: `u-${name}`, resourceVersion: String(Math.random()) },
    spec: {
      targetCRD: { name: target },
      hubVersion: 'v2',
      spokes: [
        {
          version: 'v1',
          rules: [
            {
              strategy: 'FieldRename',
              fieldRename: { hubPath: 'spec.size', spokePath: opts.spokePath ?? 'spec.replicas' },
            },
          ],
        },
      ],
      ...(opts.pin && { webhookServerRef: { name: opts.pin } }),
    },
    ...(opts.status && { status: opts.status }),
  };
}
