// What the instances handler and a webhook-server's replicas leave in an instance's namespace,
// for tests and benchmarks that play the data plane: the serving Secret with the `ca.crt` the
// handover puts in a target's caBundle, and an EndpointSlice naming the instance's ready Pods.
// Each Pod's served-set Lease is test/support/served-lease.ts.
import { CoreV1Api, DiscoveryV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  servingCertSecretName,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../../src/api/constants.ts';
import { x509Issuer } from '../../src/tls/x509-issuer.ts';

let slices = 0;

export async function fakeDataPlane(
  kc: KubeConfig,
  opts: { namespace: string; instance: string; readyPods: string[] },
): Promise<void> {
  const { namespace, instance, readyPods } = opts;
  const now = Date.now();
  const ca = await x509Issuer().createCa({
    commonName: instance,
    notBeforeMs: now - 60_000,
    notAfterMs: now + 3_600_000,
  });
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: servingCertSecretName(instance) },
      data: { 'ca.crt': Buffer.from(ca.certPem).toString('base64') },
    },
  });
  const slice = ++slices;
  await kc.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace,
    body: {
      metadata: {
        name: `${webhookServiceName(instance)}-x${slice}`,
        labels: {
          [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
          [WEBHOOK_SERVER_LABEL]: instance,
          'kubernetes.io/service-name': webhookServiceName(instance),
        },
      },
      addressType: 'IPv4',
      endpoints: readyPods.map((pod, i) => ({
        addresses: [`10.9.${slice % 250}.${i + 1}`],
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: pod, namespace },
      })),
    },
  });
}
