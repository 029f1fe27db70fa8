import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, type KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { NatsPermissionsMode } from '../access/nats-authorization.ts';
import { apiUrl, HttpMethod, send } from '../kube/request.ts';
import { createLogger } from '../runtime/logger.ts';
import {
  type ApiServer,
  type ControlPlaneFiles,
  FRONT_PROXY_CLIENT,
  startApiServer,
  startControllerManager,
  startEtcd,
} from './control-plane.ts';
import {
  makeStaticIdentities,
  type StaticIdentities,
  type StaticIdentityName,
  writeTokenAuthFile,
} from './identities.ts';
import { type ClusterEndpoint, kubeConfigFromToken, writeKubeConfig } from './kubeconfig.ts';
import type { ManagedProcess } from './managed-process.ts';
import { NatsServer } from './nats.ts';
import { NatsCluster } from './nats-cluster.ts';
import { makeLocalNatsCredentials } from './nats-credentials.ts';
import { NodeAgent } from './node-agent/agent.ts';
import { APISERVER_KUBELET_CLIENT } from './node-agent/kubelet-server.ts';
import { nodeAgentClusterRole } from './node-agent/rbac.ts';
import { createCertificateAuthority, createServiceAccountKey, issueCertificate } from './pki.ts';
import { waitFor } from './wait.ts';

export const PROJECT_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const LOCAL_NODE_NAME = 'switchyard-local';

export interface LocalClusterOptions {
  /** Directory holding the built etcd, kube-apiserver, kube-controller-manager and kubectl (set by scripts/lib/bootstrap.sh). */
  binDir?: string;
  /** Where the cluster's state and logs go; a fresh temp dir by default. */
  dir?: string;
  extraApiServerArgs?: string[];
  /** Appended to nats-server's configuration. */
  natsConfig?: string;
  /**
   * A JetStream cluster of three nats-server processes (`nats-cluster.ts`) instead of one server:
   * `natsUrl` then names all three, comma-separated, as `nats.url` takes it.
   */
  natsCluster?: boolean;
  /**
   * nats-server requires TLS of its clients, with a certificate of a CA of the stack's own
   * (`nats-tls.ts`; one for every node of a cluster): `natsCaFile` is what a client trusts.
   * On by default, as deploy/'s NATS; `false` for a test of a server in clear.
   */
  natsTls?: boolean;
  log?: Logger;
}

/** What a test, a benchmark or the demo needs to use a running local cluster. */
export interface LocalClusterInfo {
  dir: string;
  endpoint: ClusterEndpoint;
  /** kubeconfig file per static identity (admin, nobody, …). */
  kubeConfigs: Record<StaticIdentityName, string>;
  auditLog: string;
  /** etcd's client URL, for tests that compact history to force 410 Gone. */
  etcdUrl: string;
  natsUrl: string;
  /**
   * The CA nats-server's certificate chains to (`nats.tls.caFile`), when it requires TLS; connect
   * with `natsConnectOptions` (`nats-client.ts`), which takes both.
   */
  natsCaFile?: string | undefined;
  natsMonitorUrl: string;
  /** One password file per component's NATS user (`nats-credentials.ts`); connecting without one is admin. */
  natsCredentialsDir: string;
}

export interface LocalCluster extends LocalClusterInfo {
  identities: StaticIdentities;
  kubeConfigFor(identity: StaticIdentityName): KubeConfig;
  nodeAgent: NodeAgent;
  /**
   * nats-server, for fault tests: `stop({ kill: true })` and `launch()`, `freeze()` and `thaw()`.
   * On a clustered stack, its first node: the faults of a cluster act on `natsCluster`'s nodes.
   */
  nats: NatsServer;
  /** With `natsCluster`, every node, the meta leader and each stream's leader. */
  natsCluster: NatsCluster | undefined;
  /**
   * Stops kube-apiserver (SIGKILL unless `signal` says otherwise) and starts it again with the
   * same flags, on the same port, over the same etcd, once `downMs` more have passed; resolves
   * when its /readyz answers ok (what a load balancer in front of it waits for), with when it
   * went down and when it was ready again (`Date.now()` ms).
   */
  restartApiServer(opts?: {
    signal?: NodeJS.Signals;
    downMs?: number;
  }): Promise<{ stoppedAtMs: number; readyAtMs: number }>;
  /** Every process the cluster runs: control plane, NATS and pods. */
  pids(): { name: string; pid: number }[];
  /** What nats-server refused a component's user so far (`NatsServer.permissionViolations`). */
  natsPermissionViolations(): Promise<string[]>;
  /**
   * The components' NATS users keep their passwords and get their own permissions (`scoped`, as
   * deploy/ gives them) or every permission (`open`), reloaded in place: a benchmark's A/B of what
   * the permission checks cost. A single server only.
   */
  setNatsPermissions(mode: NatsPermissionsMode): Promise<void>;
  /** Stops every process. Removes the directory unless `keepDir` (keep logs when a test failed). */
  stop(opts?: { keepDir?: boolean }): Promise<void>;
}

export function kubeBinDir(explicit?: string): string {
  const dir = explicit ?? process.env.SWITCHYARD_BIN_DIR;
  if (!dir) {
    throw new Error(
      'SWITCHYARD_BIN_DIR is not set: run through scripts/test.sh or scripts/demo.sh, which build the control plane binaries',
    );
  }
  return dir;
}

/**
 * The kubectl built beside the control plane from the same pinned Kubernetes
 * module (`scripts/lib/build-kube-bins.sh`), so client and server are one version.
 */
export function kubectlPath(binDir?: string): string {
  return join(kubeBinDir(binDir), 'kubectl');
}

async function preparePki(dir: string) {
  const pki = join(dir, 'pki');
  await mkdir(pki, { recursive: true });
  const ca = await createCertificateAuthority(pki, 'switchyard-local-ca');
  const serving = await issueCertificate(ca, pki, 'kube-apiserver', {
    commonName: 'kube-apiserver',
    dnsNames: ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc'],
    ipAddresses: ['127.0.0.1', '127.20.0.1'],
  });
  const sa = await createServiceAccountKey(pki);
  // The kubelet API the node agent serves (`kubectl logs`, `exec`, …), and the apiserver's client for it.
  const kubelet = await issueCertificate(ca, pki, 'kubelet', {
    commonName: 'switchyard-local-kubelet',
    ipAddresses: ['127.0.0.1'],
  });
  const kubeletClient = await issueCertificate(ca, pki, 'kube-apiserver-kubelet-client', {
    commonName: APISERVER_KUBELET_CLIENT,
  });
  // The aggregation layer's own CA: an extension apiserver trusts it for the apiserver's proxied
  // requests alone, not for every client certificate of the cluster's CA.
  const frontProxyCa = await createCertificateAuthority(pki, 'front-proxy-ca');
  const proxyClient = await issueCertificate(frontProxyCa, pki, 'front-proxy-client', {
    commonName: FRONT_PROXY_CLIENT,
  });
  return { ca, serving, sa, kubelet, kubeletClient, frontProxyCa, proxyClient };
}

async function waitForApiServer(api: ApiServer, admin: KubeConfig): Promise<void> {
  const core = admin.makeApiClient(CoreV1Api);
  await waitFor(
    'kube-apiserver to serve the default namespace',
    async () => {
      if (!api.process.running) throw new Error(`kube-apiserver exited; see ${api.process.logFile}`);
      await core.readNamespace({ name: 'default' });
      return true;
    },
    { timeoutMs: 90_000, intervalMs: 250 },
  );
}

/** Until the apiserver's /readyz answers 200: every post-start hook done, CRDs served. */
async function waitForApiServerReady(api: ApiServer, admin: KubeConfig): Promise<void> {
  await waitFor(
    'kube-apiserver to be ready (/readyz)',
    async () => {
      if (!api.process.running) throw new Error(`kube-apiserver exited; see ${api.process.logFile}`);
      const res = await send(admin, HttpMethod.GET, apiUrl(admin, '/readyz')).catch(() => undefined);
      await res?.body?.cancel();
      return res?.status === 200 ? true : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 100 },
  );
}

async function grantNodeAgent(admin: KubeConfig, user: string): Promise<void> {
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({ body: nodeAgentClusterRole });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: nodeAgentClusterRole.metadata?.name },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: nodeAgentClusterRole.metadata?.name ?? '',
      },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    },
  });
}

/**
 * Starts etcd, kube-apiserver, kube-controller-manager, nats-server (JetStream)
 * and the local node agent, all on loopback and free ports, under one private
 * directory. Every process dies with this one.
 */
export async function startLocalCluster(opts: LocalClusterOptions = {}): Promise<LocalCluster> {
  const log =
    opts.log ?? createLogger({ level: process.env.LOG_LEVEL ?? 'warn', format: 'auto' }, 'local-cluster');
  const dir = opts.dir ?? (await mkdtemp(join(tmpdir(), 'switchyard-cluster-')));
  await mkdir(join(dir, 'logs'), { recursive: true });
  // Every process of the stack, and nats-server, which may run in a container instead.
  const processes: (ManagedProcess | NatsServer)[] = [];
  let nodeAgent: NodeAgent | undefined;
  const stopAll = async () => {
    await nodeAgent?.stop();
    for (const p of [...processes].reverse()) await p.stop();
  };
  try {
    const { ca, serving, sa, kubelet, kubeletClient, frontProxyCa, proxyClient } = await preparePki(dir);
    const identities = makeStaticIdentities();
    const files: ControlPlaneFiles = {
      dir,
      binDir: kubeBinDir(opts.binDir),
      caFile: ca.certFile,
      servingCertFile: serving.certFile,
      servingKeyFile: serving.keyFile,
      serviceAccountKeyFile: sa.keyFile,
      serviceAccountPubFile: sa.pubFile,
      tokenAuthFile: join(dir, 'tokens.csv'),
      controllerManagerKubeConfig: join(dir, 'kube-controller-manager.kubeconfig'),
      frontProxyCaFile: frontProxyCa.certFile,
      proxyClientCertFile: proxyClient.certFile,
      proxyClientKeyFile: proxyClient.keyFile,
    };
    await writeTokenAuthFile(files.tokenAuthFile, identities);

    const natsTls = opts.natsTls ?? true;
    const natsUsers = await makeLocalNatsCredentials(dir);
    const natsConfig = [natsUsers.authorization, opts.natsConfig ?? ''].join('\n');
    const [etcd, bus] = await Promise.all([
      startEtcd(files, log),
      opts.natsCluster
        ? NatsCluster.start(dir, log, natsConfig, { tls: natsTls })
        : NatsServer.start(dir, log, natsConfig, { tls: natsTls }),
    ]);
    const natsCluster = bus instanceof NatsCluster ? bus : undefined;
    const nats = bus instanceof NatsCluster ? (bus.nodes[0] as NatsServer) : bus;
    processes.push(etcd.process, ...(natsCluster?.nodes ?? [nats]));
    const kubeletArgs = [
      `--kubelet-client-certificate=${kubeletClient.certFile}`,
      `--kubelet-client-key=${kubeletClient.keyFile}`,
      `--kubelet-certificate-authority=${ca.certFile}`,
      '--kubelet-preferred-address-types=InternalIP',
    ];
    const api = await startApiServer(
      files,
      etcd.url,
      [...kubeletArgs, ...(opts.extraApiServerArgs ?? [])],
      log,
    );
    processes.push(api.process);
    const endpoint: ClusterEndpoint = { server: api.url, caFile: ca.certFile };

    const kubeConfigs = {} as Record<StaticIdentityName, string>;
    for (const [name, identity] of Object.entries(identities) as [
      StaticIdentityName,
      StaticIdentities[StaticIdentityName],
    ][]) {
      kubeConfigs[name] = join(dir, `${name}.kubeconfig`);
      await writeKubeConfig(kubeConfigs[name], endpoint, identity.user, identity.token);
    }
    await writeKubeConfig(
      files.controllerManagerKubeConfig,
      endpoint,
      identities.controllerManager.user,
      identities.controllerManager.token,
    );
    const kubeConfigFor = (name: StaticIdentityName) =>
      kubeConfigFromToken(endpoint, identities[name].user, identities[name].token);

    const admin = kubeConfigFor('admin');
    await waitForApiServer(api, admin);
    processes.push(startControllerManager(files, log));
    await grantNodeAgent(admin, identities.nodeAgent.user);

    nodeAgent = new NodeAgent({
      kubeConfig: kubeConfigFor('nodeAgent'),
      endpoint,
      nodeName: LOCAL_NODE_NAME,
      projectRoot: PROJECT_ROOT,
      dir,
      log: log.child({ component: 'node-agent' }),
      kubeletTls: { cert: kubelet.certPem, key: kubelet.keyPem, ca: ca.certPem },
    });
    await nodeAgent.start();

    const agent = nodeAgent;
    const restartApiServer = async ({ signal = 'SIGKILL' as NodeJS.Signals, downMs = 0 } = {}) => {
      const old = api.process;
      old.kill(signal);
      await old.whenExited();
      const stoppedAtMs = Date.now();
      if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
      api.process = old.respawn();
      processes[processes.indexOf(old)] = api.process;
      await waitForApiServerReady(api, admin);
      return { stoppedAtMs, readyAtMs: Date.now() };
    };
    return {
      dir,
      endpoint,
      kubeConfigs,
      auditLog: api.auditLog,
      etcdUrl: etcd.url,
      natsUrl: natsCluster?.url ?? nats.url,
      natsCaFile: nats.tls?.paths.caFile,
      natsMonitorUrl: nats.monitorUrl,
      natsCredentialsDir: natsUsers.dir,
      identities,
      kubeConfigFor,
      nodeAgent: agent,
      nats,
      natsCluster,
      restartApiServer,
      natsPermissionViolations: () => (natsCluster ?? nats).permissionViolations(),
      async setNatsPermissions(mode) {
        if (natsCluster) throw new Error('setNatsPermissions: a single nats-server only');
        await nats.reconfigure([natsUsers.authorizationWith(mode), opts.natsConfig ?? ''].join('\n'));
      },
      pids: () => [
        ...processes.flatMap((p) => (p.running && p.pid !== undefined ? [{ name: p.name, pid: p.pid }] : [])),
        ...agent.runningPods().flatMap((pod) => pod.pids.map((pid) => ({ name: `pod ${pod.name}`, pid }))),
      ],
      async stop({ keepDir = false } = {}) {
        await stopAll();
        if (keepDir) log.warn({ dir }, 'local cluster stopped; logs kept');
        else await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopAll();
    log.error({ dir, err }, 'local cluster failed to start; logs kept');
    throw err;
  }
}
