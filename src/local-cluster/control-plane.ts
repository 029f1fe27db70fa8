import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { freePort } from './free-port.ts';
import { ManagedProcess } from './managed-process.ts';
import { waitFor } from './wait.ts';

/** The pinned versions, also stamped into the binaries by scripts/lib/build-kube-bins.sh. */
export const KUBERNETES_VERSION = 'v1.37.2';

/** The common name of the apiserver's front-proxy client certificate, the one extension apiservers accept. */
export const FRONT_PROXY_CLIENT = 'front-proxy-client';

export interface ControlPlaneFiles {
  dir: string;
  binDir: string;
  caFile: string;
  servingCertFile: string;
  servingKeyFile: string;
  serviceAccountKeyFile: string;
  serviceAccountPubFile: string;
  tokenAuthFile: string;
  controllerManagerKubeConfig: string;
  /** The aggregation layer's front proxy: the CA extension apiservers trust, and the apiserver's client certificate. */
  frontProxyCaFile: string;
  proxyClientCertFile: string;
  proxyClientKeyFile: string;
}

/** Child processes get no proxy settings: a proxy would capture webhook calls (kubernetes#107446). */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const key of ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy', 'ALL_PROXY', 'all_proxy']) {
    delete env[key];
  }
  return env;
}

export async function startEtcd(
  files: ControlPlaneFiles,
  log: Logger,
): Promise<{ url: string; process: ManagedProcess }> {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const url = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const process = new ManagedProcess(
    {
      name: 'etcd',
      command: join(files.binDir, 'etcd'),
      args: [
        '--name=local',
        `--data-dir=${join(files.dir, 'etcd')}`,
        `--listen-client-urls=${url}`,
        `--advertise-client-urls=${url}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=local=${peer}`,
        // A throwaway test store: durability across power loss buys nothing here.
        '--unsafe-no-fsync=true',
        // Large CRDs (several MiB of schema) exist in real clusters, whose etcd is
        // configured for them; the default 1.5 MiB would refuse them.
        '--max-request-bytes=8388608',
        '--log-level=warn',
      ],
      env: childEnv(),
      logFile: join(files.dir, 'logs', 'etcd.log'),
    },
    log,
  );
  await waitFor('etcd to be healthy', async () => {
    if (!process.running) throw new Error(`etcd exited; see ${process.logFile}`);
    const res = await fetch(`${url}/health`);
    return res.ok ? true : undefined;
  });
  return { url, process };
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-controller-manager", "system:apiserver"]
  - level: None
    resources:
      - group: "coordination.k8s.io"
        resources: ["leases"]
    namespaces: ["kube-system", "kube-node-lease"]
  - level: Metadata
`;

export interface ApiServer {
  url: string;
  port: number;
  auditLog: string;
  process: ManagedProcess;
}

/**
 * kube-apiserver on loopback with RBAC, static tokens for infrastructure
 * identities, ServiceAccount tokens for everything else, and an audit log
 * (Metadata level: it records each request's user and User-Agent).
 *
 * Webhook routing: `--enable-aggregator-routing` makes the apiserver resolve a
 * webhook's `service:` reference through the Service's EndpointSlices (per
 * request in 1.37), which the local node agent fills with loopback endpoints; the
 * Service CIDR is a loopback range so that no ClusterIP can ever route off the
 * machine. See docs/local-cluster.md.
 *
 * The aggregation layer is on (`--requestheader-*`, `--proxy-client-*`): an APIService such as
 * KEDA's external metrics is served through it, routed the same way to a loopback endpoint.
 */
export async function startApiServer(
  files: ControlPlaneFiles,
  etcdUrl: string,
  extraArgs: string[],
  log: Logger,
): Promise<ApiServer> {
  const port = await freePort();
  const auditPolicy = join(files.dir, 'audit-policy.yaml');
  const auditLog = join(files.dir, 'logs', 'audit.log');
  await writeFile(auditPolicy, AUDIT_POLICY);
  const process = new ManagedProcess(
    {
      name: 'kube-apiserver',
      command: join(files.binDir, 'kube-apiserver'),
      args: [
        `--etcd-servers=${etcdUrl}`,
        '--bind-address=127.0.0.1',
        '--advertise-address=127.0.0.1',
        // The `kubernetes` Endpoints would carry a loopback address, which validation rejects.
        '--endpoint-reconciler-type=none',
        `--secure-port=${port}`,
        `--tls-cert-file=${files.servingCertFile}`,
        `--tls-private-key-file=${files.servingKeyFile}`,
        `--client-ca-file=${files.caFile}`,
        `--token-auth-file=${files.tokenAuthFile}`,
        '--authorization-mode=RBAC',
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-key-file=${files.serviceAccountPubFile}`,
        `--service-account-signing-key-file=${files.serviceAccountKeyFile}`,
        '--service-cluster-ip-range=127.20.0.0/16',
        '--enable-aggregator-routing=true',
        `--requestheader-client-ca-file=${files.frontProxyCaFile}`,
        `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
        '--requestheader-username-headers=X-Remote-User',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        `--proxy-client-cert-file=${files.proxyClientCertFile}`,
        `--proxy-client-key-file=${files.proxyClientKeyFile}`,
        '--allow-privileged=true',
        '--profiling=false',
        `--audit-policy-file=${auditPolicy}`,
        `--audit-log-path=${auditLog}`,
        '--audit-log-format=json',
        '--audit-log-maxsize=200',
        ...extraArgs,
      ],
      env: childEnv(),
      logFile: join(files.dir, 'logs', 'kube-apiserver.log'),
    },
    log,
  );
  const url = `https://127.0.0.1:${port}`;
  return { url, port, auditLog, process };
}

export function startControllerManager(files: ControlPlaneFiles, log: Logger): ManagedProcess {
  return new ManagedProcess(
    {
      name: 'kube-controller-manager',
      command: join(files.binDir, 'kube-controller-manager'),
      args: [
        `--kubeconfig=${files.controllerManagerKubeConfig}`,
        `--authentication-kubeconfig=${files.controllerManagerKubeConfig}`,
        `--authorization-kubeconfig=${files.controllerManagerKubeConfig}`,
        '--leader-elect=false',
        '--bind-address=127.0.0.1',
        '--secure-port=0',
        '--use-service-account-credentials=false',
        `--root-ca-file=${files.caFile}`,
        `--controllers=${[
          'deployment-controller',
          'replicaset-controller',
          'job-controller',
          'ttl-after-finished-controller',
          'garbage-collector-controller',
          'namespace-controller',
          'endpointslice-controller',
          'endpoints-controller',
          'serviceaccount-controller',
          'disruption-controller',
          'root-ca-certificate-publisher-controller',
          // For KEDA's HorizontalPodAutoscalers (the autoscaling test); idle without one.
          'horizontal-pod-autoscaler-controller',
        ].join(',')}`,
        '--concurrent-deployment-syncs=5',
        '--concurrent-replicaset-syncs=5',
      ],
      env: childEnv(),
      logFile: join(files.dir, 'logs', 'kube-controller-manager.log'),
    },
    log,
  );
}
