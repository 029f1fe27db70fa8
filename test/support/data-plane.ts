// What a test writes in place of the instances handler and the data plane, for an instance whose
// webhook server does not run: its serving Secret (the `ca.crt` a handover publishes as the
// target's caBundle) and the EndpointSlice of its Service naming its ready Pods (the handover
// gate waits for a report from each).
import { CoreV1Api, DiscoveryV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  servingCertSecretName,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../../src/api/constants.ts';
import { x509Issuer } from '../../src/tls/x509-issuer.ts';

/**
 * The instance's serving Secret with a CA of its own (the apiserver refuses a caBundle that
 * does not parse). Resolves to `ca.crt` as the Secret's data holds it (base64).
 */
export async function createServingSecret(
  kc: KubeConfig,
  namespace: string,
  instance: string,
): Promise<string> {
  const now = Date.now();
  const ca = await x509Issuer().createCa({
    commonName: instance,
    notBeforeMs: now - 60_000,
    notAfterMs: now + 3_600_000,
  });
  const caCrt = Buffer.from(ca.certPem).toString('base64');
  await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
    namespace,
    body: { metadata: { name: servingCertSecretName(instance) }, data: { 'ca.crt': caCrt } },
  });
  return caCrt;
}

let slices = 0;

/** What the EndpointSlice controller would write for the instance's Service: these Pods ready. */
export async function createReadyEndpointSlice(
  kc: KubeConfig,
  namespace: string,
  instance: string,
  pods: readonly string[],
): Promise<void> {
  const subnet = ++slices;
  await kc.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace,
    body: {
      metadata: {
        name: `${webhookServiceName(instance)}-x1`,
        labels: {
          [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
          [WEBHOOK_SERVER_LABEL]: instance,
          'kubernetes.io/service-name': webhookServiceName(instance),
        },
      },
      addressType: 'IPv4',
      endpoints: pods.map((pod, i) => ({
        addresses: [`10.9.${subnet}.${i + 1}`],
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: pod, namespace },
      })),
    },
  });
}
