// KEDA (operator and metrics adapter, built from Go modules by the bootstrap: SWITCHYARD_KEDA_DIR)
// running beside the local stack as it runs in a cluster: its release's CRDs and RBAC, its
// ServiceAccount's token, operator and adapter talking over mutual TLS, and the adapter served
// through the apiserver's aggregation layer as `v1beta1.external.metrics.k8s.io`, routed to its
// loopback port by a Service and an EndpointSlice. The kube-controller-manager's
// HorizontalPodAutoscaler controller then scales what KEDA's HorizontalPodAutoscalers name.
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiregistrationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isNotFound } from '../../src/kube/errors.ts';
import { childEnv } from '../../src/local-cluster/control-plane.ts';
import { freePort } from '../../src/local-cluster/free-port.ts';
import { type ClusterEndpoint, writeKubeConfig } from '../../src/local-cluster/kubeconfig.ts';
import type { KubectlResult } from '../../src/local-cluster/kubectl.ts';
import { ManagedProcess } from '../../src/local-cluster/managed-process.ts';
import { createCertificateAuthority, issueCertificate } from '../../src/local-cluster/pki.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';

/** Where KEDA's manifests install it, and the names its manifests give its account and APIService. */
const KEDA_NAMESPACE = 'keda';
const KEDA_ACCOUNT = 'keda-operator';
const METRICS_SERVICE = 'keda-metrics-apiserver';
const EXTERNAL_METRICS_API = 'v1beta1.external.metrics.k8s.io';

/** Its operator's and adapter's logs are `keda-operator.log` and `keda-adapter.log` in its directory. */
export interface RunningKeda {
  /**
   * Deletes every ScaledObject while the operator can still remove its finalizer, then the
   * APIService (an unavailable one would stall every namespace deletion), then stops KEDA.
   */
  stop(): Promise<void>;
}

export function kedaDir(): string {
  const dir = process.env.SWITCHYARD_KEDA_DIR;
  if (!dir) throw new Error('SWITCHYARD_KEDA_DIR is not set: run the tests through scripts/test.sh');
  return dir;
}

type Kubectl = (args: string[]) => Promise<KubectlResult>;

async function kubectlOk(kubectl: Kubectl, args: string[]): Promise<void> {
  const res = await kubectl(args);
  if (res.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${res.stderr}`);
}

/** KEDA's CRDs, ServiceAccount and RBAC (operator's and metrics adapter's), from the release built. */
async function installManifests(kubectl: Kubectl): Promise<void> {
  const config = join(kedaDir(), 'config');
  const crds = (await readdir(join(config, 'crd/bases'))).map((f) => join(config, 'crd/bases', f));
  const apply = (file: string) =>
    kubectlOk(kubectl, ['apply', '--server-side', '--force-conflicts', '-f', file]);
  for (const file of crds) await apply(file);
  await kubectlOk(kubectl, [
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    ...crds.flatMap((f) => ['-f', f]),
  ]);
  const namespace = await kubectl(['create', 'namespace', KEDA_NAMESPACE]);
  if (namespace.code !== 0 && !namespace.stderr.includes('AlreadyExists')) throw new Error(namespace.stderr);
  for (const file of [
    'service_account/service_account.yaml',
    'rbac/role.yaml',
    'rbac/role_binding.yaml',
    'metrics-server/role.yaml',
    'metrics-server/role_binding.yaml',
  ]) {
    await apply(join(config, file));
  }
}

/** A kubeconfig of KEDA's ServiceAccount, with a token from the TokenRequest API as a Pod gets. */
async function accountKubeConfig(admin: KubeConfig, endpoint: ClusterEndpoint, file: string): Promise<void> {
  const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    namespace: KEDA_NAMESPACE,
    name: KEDA_ACCOUNT,
    body: { spec: { expirationSeconds: 3600 } },
  });
  const user = `system:serviceaccount:${KEDA_NAMESPACE}:${KEDA_ACCOUNT}`;
  await writeKubeConfig(file, endpoint, user, token.status?.token ?? '');
}

/**
 * The files KEDA reads from its certificate directory (`ca.crt`, `tls.crt`, `tls.key`): one
 * certificate for the operator's gRPC server, the adapter's client of it, and the adapter's serving
 * of the aggregated API, as KEDA's own certificate rotation issues one for all three.
 */
async function issueKedaCertificates(certDir: string): Promise<string> {
  await mkdir(certDir, { recursive: true });
  const ca = await createCertificateAuthority(certDir, 'ca');
  await issueCertificate(ca, certDir, 'tls', {
    commonName: 'keda',
    dnsNames: [
      `${METRICS_SERVICE}.${KEDA_NAMESPACE}.svc`,
      `keda-operator.${KEDA_NAMESPACE}.svc`,
      'localhost',
    ],
    ipAddresses: ['127.0.0.1'],
  });
  return ca.certPem;
}

/**
 * A Service without selector and the EndpointSlice naming the adapter's loopback port: an FQDN
 * slice, as the node agent writes for Pods, since an IPv4 one may not hold a loopback address.
 */
async function routeMetricsService(admin: KubeConfig, adapterPort: number): Promise<void> {
  await admin.makeApiClient(CoreV1Api).createNamespacedService({
    namespace: KEDA_NAMESPACE,
    body: {
      metadata: { name: METRICS_SERVICE },
      spec: { ports: [{ name: 'https', port: 443, targetPort: adapterPort }] },
    },
  });
  await admin.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace: KEDA_NAMESPACE,
    body: {
      metadata: {
        name: `${METRICS_SERVICE}-local`,
        labels: { 'kubernetes.io/service-name': METRICS_SERVICE },
      },
      addressType: 'FQDN',
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      ports: [{ name: 'https', port: adapterPort, protocol: 'TCP' }],
    },
  });
}

async function registerExternalMetricsApi(admin: KubeConfig, caPem: string): Promise<void> {
  await admin.makeApiClient(ApiregistrationV1Api).createAPIService({
    body: {
      metadata: { name: EXTERNAL_METRICS_API },
      spec: {
        service: { name: METRICS_SERVICE, namespace: KEDA_NAMESPACE, port: 443 },
        group: 'external.metrics.k8s.io',
        version: 'v1beta1',
        caBundle: Buffer.from(caPem).toString('base64'),
        groupPriorityMinimum: 100,
        versionPriority: 100,
      },
    },
  });
}

async function waitForExternalMetricsApi(admin: KubeConfig, processes: ManagedProcess[]): Promise<void> {
  const registration = admin.makeApiClient(ApiregistrationV1Api);
  await waitFor(
    `APIService ${EXTERNAL_METRICS_API} available`,
    async () => {
      for (const p of processes) if (!p.running) throw new Error(`${p.name} exited; see ${p.logFile}`);
      const api = await registration.readAPIService({ name: EXTERNAL_METRICS_API });
      return api.status?.conditions?.some((c) => c.type === 'Available' && c.status === 'True') || undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
}

async function deleteEveryScaledObject(admin: KubeConfig): Promise<void> {
  const custom = admin.makeApiClient(CustomObjectsApi);
  const list = () =>
    custom.listClusterCustomObject({
      group: 'keda.sh',
      version: 'v1alpha1',
      plural: 'scaledobjects',
    }) as Promise<{
      items: { metadata: { name: string; namespace: string } }[];
    }>;
  for (const { metadata } of (await list()).items) {
    await custom
      .deleteNamespacedCustomObject({
        group: 'keda.sh',
        version: 'v1alpha1',
        plural: 'scaledobjects',
        namespace: metadata.namespace,
        name: metadata.name,
      })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
  }
  await waitFor(
    'every ScaledObject gone',
    async () => ((await list()).items.length === 0 ? true : undefined),
    {
      timeoutMs: 60_000,
      intervalMs: 250,
    },
  );
}

export async function startKeda(opts: {
  admin: KubeConfig;
  endpoint: ClusterEndpoint;
  kubectl: Kubectl;
  dir: string;
  log: Logger;
}): Promise<RunningKeda> {
  const { admin, dir, log } = opts;
  await mkdir(dir, { recursive: true });
  await installManifests(opts.kubectl);
  const kubeconfig = join(dir, 'keda.kubeconfig');
  await accountKubeConfig(admin, opts.endpoint, kubeconfig);
  const certDir = join(dir, 'certs');
  const caPem = await issueKedaCertificates(certDir);
  const caDir = join(dir, 'scaler-cas');
  await mkdir(caDir, { recursive: true });
  const [grpcPort, operatorMetricsPort, probePort, adapterPort, adapterMetricsPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const env = childEnv({
    KUBECONFIG: kubeconfig,
    WATCH_NAMESPACE: '',
    POD_NAMESPACE: KEDA_NAMESPACE,
    KEDA_CLUSTER_OBJECT_NAMESPACE: KEDA_NAMESPACE,
  });
  const operator = new ManagedProcess(
    {
      name: 'keda-operator',
      command: join(kedaDir(), 'keda-operator'),
      args: [
        `--metrics-bind-address=127.0.0.1:${operatorMetricsPort}`,
        `--health-probe-bind-address=127.0.0.1:${probePort}`,
        `--metrics-service-bind-address=127.0.0.1:${grpcPort}`,
        `--cert-dir=${certDir}`,
        // Extra CAs for scalers' TLS connections: none (KEDA reads every file of the directory).
        `--ca-dir=${caDir}`,
        '--enable-cert-rotation=false',
        '--zap-log-level=info',
      ],
      env,
      logFile: join(dir, 'keda-operator.log'),
    },
    log,
  );
  const adapter = new ManagedProcess(
    {
      name: 'keda-adapter',
      command: join(kedaDir(), 'keda-adapter'),
      args: [
        `--secure-port=${adapterPort}`,
        '--bind-address=127.0.0.1',
        `--port=${adapterMetricsPort}`,
        `--cert-dir=${certDir}`,
        `--tls-cert-file=${join(certDir, 'tls.crt')}`,
        `--tls-private-key-file=${join(certDir, 'tls.key')}`,
        `--metrics-service-address=127.0.0.1:${grpcPort}`,
        `--kubeconfig=${kubeconfig}`,
        `--lister-kubeconfig=${kubeconfig}`,
        `--authentication-kubeconfig=${kubeconfig}`,
        `--authorization-kubeconfig=${kubeconfig}`,
        '--zap-log-level=info',
      ],
      env,
      logFile: join(dir, 'keda-adapter.log'),
    },
    log,
  );
  const processes = [operator, adapter];
  const stopProcesses = async () => {
    for (const p of processes) await p.stop();
  };
  try {
    await routeMetricsService(admin, adapterPort);
    await registerExternalMetricsApi(admin, caPem);
    await waitForExternalMetricsApi(admin, processes);
  } catch (err) {
    await admin
      .makeApiClient(ApiregistrationV1Api)
      .deleteAPIService({ name: EXTERNAL_METRICS_API })
      .catch(() => undefined);
    await stopProcesses();
    throw err;
  }
  return {
    async stop() {
      try {
        await deleteEveryScaledObject(admin);
      } finally {
        await admin.makeApiClient(ApiregistrationV1Api).deleteAPIService({ name: EXTERNAL_METRICS_API });
        await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: KEDA_NAMESPACE });
        await stopProcesses();
      }
    },
  };
}
