// Crossplane core on the local stack, for the tests of XRD targets: the real XRD controller that
// turns a CompositeResourceDefinition into the CRDs it defines (the composite's, named as the
// XRD, and for a v1 XRD with claimNames the claim's) and copies the XRD's spec.conversion into
// them. The apiserver routes conversions by those generated CRDs, not by the XRD.
//
// The binary and its CRDs are built by the bootstrap from a pinned source snapshot
// (scripts/lib/build-crossplane.sh, `ensure_crossplane`, called by scripts/test.sh), which names
// the directory holding them in SWITCHYARD_CROSSPLANE_DIR. Crossplane runs as a process of this
// machine, as `crossplane core start` without its admission webhooks (nothing routes to them
// here), with every port it listens on chosen free, and a CA and certificates of its own for the
// TLS material it loads at start (its function runner's client certificate, its webhook server's).
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { parseAllDocuments } from 'yaml';
import { KINDS } from '../api/resources.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../kube/request.ts';
import { createLogger } from '../runtime/logger.ts';
import { servesGroupVersion } from '../watchers/list-objects.ts';
import { childEnv } from './control-plane.ts';
import { freePort } from './free-port.ts';
import { ManagedProcess } from './managed-process.ts';
import { createCertificateAuthority, issueCertificate } from './pki.ts';
import { WaitHopeless, waitFor } from './wait.ts';

/** The namespace `crossplane core start` works in (its default, `POD_NAMESPACE`). */
export const CROSSPLANE_NAMESPACE = 'crossplane-system';
/** The file of Crossplane's CRD directory that defines CompositeResourceDefinitions. */
export const XRD_CRD_FILE = 'apiextensions.crossplane.io_compositeresourcedefinitions.yaml';
/** The field manager of the CRDs applied here. */
const FIELD_MANAGER = 'switchyard-local-cluster';
/** The controllers that write the generated CRDs: the composite's, and the claim's. */
const XRD_CONTROLLERS = [
  'defined/compositeresourcedefinition.apiextensions.crossplane.io',
  'offered/compositeresourcedefinition.apiextensions.crossplane.io',
];

/** The directory the bootstrap built Crossplane into (SWITCHYARD_CROSSPLANE_DIR). */
export function crossplaneDir(): string {
  const dir = process.env.SWITCHYARD_CROSSPLANE_DIR;
  if (!dir) {
    throw new Error(
      'SWITCHYARD_CROSSPLANE_DIR is not set: run the tests through scripts/test.sh, or `source scripts/lib/bootstrap.sh && bootstrap && ensure_crossplane` first',
    );
  }
  return dir;
}

/** Crossplane's own CRDs, as its snapshot's cluster/crds/ has them. */
export function crossplaneCrdDir(): string {
  return join(crossplaneDir(), 'crds');
}

type KubeConfigLike = KubeConfig | string;

function kubeConfigOf(kc: KubeConfigLike): KubeConfig {
  if (typeof kc !== 'string') return kc;
  const loaded = new KubeConfig();
  loaded.loadFromFile(kc);
  return loaded;
}

interface CrdDocument {
  metadata: { name: string };
}

/** The CRDs of Crossplane's CRD directory: every file, or only `files` (names in that directory). */
async function crossplaneCrds(files?: readonly string[]): Promise<CrdDocument[]> {
  const dir = crossplaneCrdDir();
  const names = files ?? (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  const docs = await Promise.all(
    names.map(async (f) => parseAllDocuments(await readFile(join(dir, f), 'utf8')).map((d) => d.toJS())),
  );
  return docs.flat().filter((d): d is CrdDocument => d?.kind === 'CustomResourceDefinition');
}

const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;

/**
 * Applies Crossplane's CRDs server-side, as `kubectl apply --server-side` does (its YAML as
 * written, no client model in between), and waits until each is Established. `files` limits it
 * to those files of the directory (`[XRD_CRD_FILE]`: only the XRD API, for a test that needs no
 * more). Usable without starting Crossplane.
 */
export async function applyCrossplaneCrds(
  kubeConfig: KubeConfigLike,
  opts: { files?: readonly string[] } = {},
): Promise<string[]> {
  const kc = kubeConfigOf(kubeConfig);
  const crds = await crossplaneCrds(opts.files);
  for (const crd of crds) {
    const url = apiUrl(kc, crdPath(crd.metadata.name));
    url.searchParams.set('fieldManager', FIELD_MANAGER);
    url.searchParams.set('force', 'true');
    await sendForJson(kc, HttpMethod.PATCH, url, {
      body: crd,
      contentType: 'application/apply-patch+yaml',
    });
  }
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const names = crds.map((c) => c.metadata.name);
  for (const name of names) {
    await waitFor(`CRD ${name} Established`, async () => {
      const crd = await api.readCustomResourceDefinition({ name });
      return crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
        ? true
        : undefined;
    });
  }
  return names;
}

/**
 * Deletes Crossplane's CRDs (every one, or those of `files`) and waits until they are gone. Delete
 * the objects Crossplane holds finalizers on (XRDs) while it still runs, or this waits for them.
 */
export async function removeCrossplaneCrds(
  kubeConfig: KubeConfigLike,
  opts: { files?: readonly string[]; timeoutMs?: number } = {},
): Promise<void> {
  const kc = kubeConfigOf(kubeConfig);
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const names = (await crossplaneCrds(opts.files)).map((c) => c.metadata.name);
  for (const name of names) {
    await api.deleteCustomResourceDefinition({ name }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
  let left: string[] = [];
  await waitFor(
    `Crossplane's CRDs deleted`,
    async () => {
      left = [];
      for (const name of names) {
        const crd = await api.readCustomResourceDefinition({ name }).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        });
        if (crd === undefined) continue;
        left.push(name);
        // A CRD goes once its objects have; one Crossplane made and holds a finalizer on stays
        // while Crossplane is stopped. Nothing else will ever release it.
        await releaseObjectsOf(kc, crd);
      }
      return left.length === 0 ? true : undefined;
    },
    { timeoutMs: opts.timeoutMs ?? 60_000, intervalMs: 250 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; still there: ${left.join(', ')}`);
  });
}

/**
 * Removes the finalizers of every object of a CRD that is being deleted; and the CRD's own
 * cleanup finalizer once it has no object left but the apiserver's cleanup failed (a CRD deleted
 * while its storage was still initializing reports `InstanceDeletionFailed`, "storage is
 * (re)initializing", and its retry can back off for minutes).
 */
async function releaseObjectsOf(kc: KubeConfig, crd: V1CustomResourceDefinition): Promise<void> {
  if (crd.metadata?.deletionTimestamp === undefined) return;
  const version = crd.spec.versions.find((v) => v.served)?.name;
  if (version === undefined) return;
  const collection = `/apis/${crd.spec.group}/${version}/${crd.spec.names.plural}`;
  const list = await sendForJson<{
    items?: { metadata: { name: string; namespace?: string; finalizers?: string[] } }[];
  }>(kc, HttpMethod.GET, apiUrl(kc, collection));
  const cleanupFailed = crd.status?.conditions?.some(
    (c) => c.type === 'Terminating' && c.reason === 'InstanceDeletionFailed',
  );
  if ((list.items ?? []).length === 0 && cleanupFailed && crd.metadata.finalizers?.length) {
    await sendForJson(kc, HttpMethod.PATCH, apiUrl(kc, crdPath(crd.metadata.name ?? '')), {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    });
    return;
  }
  for (const item of list.items ?? []) {
    if (!item.metadata.finalizers?.length) continue;
    const { name, namespace } = item.metadata;
    const path = namespace
      ? `/apis/${crd.spec.group}/${version}/namespaces/${namespace}/${crd.spec.names.plural}/${name}`
      : `${collection}/${name}`;
    await sendForJson(kc, HttpMethod.PATCH, apiUrl(kc, path), {
      body: { metadata: { finalizers: null } },
      contentType: 'application/merge-patch+json',
    }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  }
}

/**
 * Takes Crossplane's API back out of the cluster: its CRDs, its namespace, and waits until
 * discovery no longer serves XRDs, so that a later user of the same cluster (another test file's
 * watchers) does not find an API that is going away. Stop Crossplane after its XRDs are gone.
 */
export async function uninstallCrossplane(
  kubeConfig: KubeConfigLike,
  opts: { timeoutMs?: number } = {},
): Promise<void> {
  const kc = kubeConfigOf(kubeConfig);
  await removeCrossplaneCrds(kc, { timeoutMs: opts.timeoutMs ?? 120_000 });
  await kc
    .makeApiClient(CoreV1Api)
    .deleteNamespace({ name: CROSSPLANE_NAMESPACE })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
  const xrdApi = `/apis/${KINDS.xrd.apiVersion}`;
  await waitFor(
    `discovery no longer serves ${xrdApi}`,
    async () => ((await servesGroupVersion(kc, xrdApi)) ? undefined : true),
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

/**
 * The TLS material `crossplane core start` loads from its two certificate directories, each with
 * `ca.crt`, `tls.crt`, `tls.key` (what Crossplane's init container writes into its Secrets in a
 * cluster): one CA for both, a client certificate for its function runner, a serving certificate
 * for its webhook server (off here, but the directory is read).
 */
async function issueCrossplaneCertificates(dir: string): Promise<{ clientDir: string; serverDir: string }> {
  const caDir = join(dir, 'tls-ca');
  const clientDir = join(dir, 'tls-client');
  const serverDir = join(dir, 'tls-server');
  await Promise.all([caDir, clientDir, serverDir].map((d) => mkdir(d, { recursive: true })));
  const ca = await createCertificateAuthority(caDir, 'ca');
  await issueCertificate(ca, clientDir, 'tls', { commonName: 'crossplane' });
  await issueCertificate(ca, serverDir, 'tls', {
    commonName: 'crossplane-webhooks',
    dnsNames: [`crossplane-webhooks.${CROSSPLANE_NAMESPACE}.svc`, 'localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  await copyFile(ca.certFile, join(clientDir, 'ca.crt'));
  await copyFile(ca.certFile, join(serverDir, 'ca.crt'));
  return { clientDir, serverDir };
}

async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(CoreV1Api)
    .createNamespace({ body: { metadata: { name } } })
    .catch((err: unknown) => {
      if (!isConflict(err)) throw err;
    });
}

export interface CrossplaneOptions {
  /** The kubeconfig Crossplane runs with (`KUBECONFIG`). */
  kubeConfigPath: string;
  /** Its state, certificates and log (`crossplane.log`). */
  dir: string;
  log?: Logger;
  /** How long to wait for it to be up (default 120 s: a cold start on a busy 2-core machine). */
  startTimeoutMs?: number;
}

export interface RunningCrossplane {
  /** The pid of the `crossplane` process (setpriv execs it), undefined once it failed to start. */
  readonly pid: number | undefined;
  /** Whether the process is alive (stopped by SIGSTOP counts as alive). */
  readonly running: boolean;
  /** Whether it was paused (SIGSTOP) and not resumed since. */
  readonly paused: boolean;
  readonly logFile: string;
  /** SIGSTOP: alive, its watches open, and it writes nothing until resumed. */
  pause(): void;
  /** SIGCONT: it carries on with what its watches delivered meanwhile. */
  resume(): void;
  /** SIGKILL, no goodbye; resolves once the process is gone. `restart()` brings it back. */
  kill(): Promise<void>;
  /** Stops it if it still runs, then the same command again; resolves once it is up. */
  restart(): Promise<void>;
  /** SIGTERM (after SIGCONT if paused), SIGKILL after a grace period; resolves once it is gone. */
  stop(): Promise<void>;
}

/**
 * Starts Crossplane core against a cluster: applies its CRDs, makes its namespace and certificates,
 * starts `crossplane core start --enable-webhooks=false`, and resolves once its XRD controllers run.
 *
 * It runs with the kubeconfig it is given (the local cluster's admin, for now). In a cluster it
 * runs as its own ServiceAccount, `crossplane`, with the ClusterRole its Helm chart grants.
 */
export async function startCrossplane(opts: CrossplaneOptions): Promise<RunningCrossplane> {
  const { dir, kubeConfigPath } = opts;
  const log =
    opts.log ?? createLogger({ level: process.env.LOG_LEVEL ?? 'warn', format: 'auto' }, 'crossplane');
  const binary = join(crossplaneDir(), 'crossplane');
  await mkdir(dir, { recursive: true });
  const kc = kubeConfigOf(kubeConfigPath);
  await applyCrossplaneCrds(kc);
  await ensureNamespace(kc, CROSSPLANE_NAMESPACE);
  const { clientDir, serverDir } = await issueCrossplaneCertificates(dir);
  const [metricsPort, probePort, webhookPort] = [await freePort(), await freePort(), await freePort()];
  let current = new ManagedProcess(
    {
      name: 'crossplane',
      command: binary,
      args: [
        'core',
        'start',
        '--enable-webhooks=false',
        `--xpkg-cache-dir=${join(dir, 'xpkg')}`,
        `--xfn-cache-dir=${join(dir, 'xfn')}`,
        // Crossplane binds these on every address (`:<port>`): free ports, so that nothing collides.
        `--metrics-port=${metricsPort}`,
        `--health-probe-port=${probePort}`,
        `--webhook-port=${webhookPort}`,
      ],
      env: childEnv({
        KUBECONFIG: kubeConfigPath,
        POD_NAMESPACE: CROSSPLANE_NAMESPACE,
        TLS_CLIENT_CERTS_DIR: clientDir,
        TLS_SERVER_CERTS_DIR: serverDir,
      }),
      logFile: join(dir, 'crossplane.log'),
    },
    log,
  );
  let paused = false;
  const timeoutMs = opts.startTimeoutMs ?? 120_000;

  /**
   * Up: the manager answers its readiness probe, and its metrics show both XRD controllers
   * started (controller-runtime sets a controller's worker count when it starts it).
   */
  const waitUntilUp = async (p: ManagedProcess) => {
    await waitFor(
      `Crossplane's XRD controllers running (log: ${p.logFile})`,
      async () => {
        if (!p.running) throw new WaitHopeless(`crossplane exited; see ${p.logFile}`);
        const ready = await fetch(`http://127.0.0.1:${probePort}/readyz`);
        if (!ready.ok) return undefined;
        const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
        const started = XRD_CONTROLLERS.every((c) =>
          metrics.includes(`controller_runtime_max_concurrent_reconciles{controller="${c}"}`),
        );
        return started || undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );
  };
  const stopCurrent = async () => {
    if (paused) current.kill('SIGCONT');
    paused = false;
    await current.stop();
  };

  try {
    await waitUntilUp(current);
  } catch (err) {
    await stopCurrent();
    throw err;
  }

  return {
    get pid() {
      return current.pid;
    },
    get running() {
      return current.running;
    },
    get paused() {
      return paused && current.running;
    },
    get logFile() {
      return current.logFile;
    },
    pause() {
      if (!current.running) throw new Error('crossplane is not running: nothing to pause');
      current.kill('SIGSTOP');
      paused = true;
    },
    resume() {
      current.kill('SIGCONT');
      paused = false;
    },
    async kill() {
      current.kill('SIGKILL');
      paused = false;
      await current.whenExited();
    },
    async restart() {
      await stopCurrent();
      current = current.respawn();
      try {
        await waitUntilUp(current);
      } catch (err) {
        await stopCurrent();
        throw err;
      }
    },
    stop: stopCurrent,
  };
}
