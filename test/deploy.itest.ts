// deploy/ as a platform team applies it. Every overlay renders with kustomize and passes the
// apiserver's server-side dry run: schemas with unknown fields refused, admission, and Pod
// Security "restricted" in the namespace (any warning fails the test). Third-party kinds are
// checked against their projects' own CRDs: the Prometheus Operator's (ServiceMonitor, PrometheusRule)
// and KEDA's (ScaledObject). deploy/nats-cluster's server
// configuration is checked by nats-server itself: its configuration test for each Pod, and
// three processes started with it forming one JetStream cluster. And the identities
// deploy/default creates can do what each component needs and nothing it must not
// (SubjectAccessReviews against its RBAC, applied under a name prefix of this file's own).
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { AuthorizationV1Api, CoreV1Api, type KubernetesObject, loadAllYaml } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../src/local-cluster/cluster.ts';
import { childEnv } from '../src/local-cluster/control-plane.ts';
import { freePort } from '../src/local-cluster/free-port.ts';
import { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { natsServerBinary } from '../src/local-cluster/nats.ts';
import { LocalNatsTls } from '../src/local-cluster/nats-tls.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { kedaDir } from './support/keda.ts';
import { useLocalCluster } from './support/local-cluster.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const suffix = randomBytes(3).toString('hex');
/** The dry runs' namespace: the overlays' own, renamed, with the same Pod Security label. */
const namespace = `deploy-check-${suffix}`;
const prefix = `sar-${suffix}-`;
const dirs: string[] = [];
const execFileAsync = promisify(execFile);

/** Applies a third-party CRD and waits until the apiserver serves it. */
async function installCrd(file: string, name: string): Promise<void> {
  const applied = await cluster.kubectl(['apply', '--server-side', '-f', file]);
  expect(applied.stderr).toBe('');
  await waitFor(`the ${name} CRD established`, async () => {
    const res = await cluster.kubectl([
      'get',
      'crd',
      name,
      '-o',
      'jsonpath={.status.conditions[?(@.type=="Established")].status}',
    ]);
    return res.stdout === 'True' ? true : undefined;
  });
}

/** The Prometheus Operator's own CRDs, fetched by the bootstrap (scripts/lib/fetch-monitoring-crds.sh). */
function monitoringCrd(file: string): string {
  const dir = process.env.SWITCHYARD_MONITORING_CRDS;
  if (!dir) throw new Error('SWITCHYARD_MONITORING_CRDS is not set: run the tests through scripts/test.sh');
  return join(dir, file);
}

beforeAll(async () => {
  // KEDA's own CRD, of the release the autoscaling test runs (scripts/lib/build-keda.sh).
  await installCrd(join(kedaDir(), 'config/crd/bases/keda.sh_scaledobjects.yaml'), 'scaledobjects.keda.sh');
  await installCrd(
    monitoringCrd('monitoring.coreos.com_servicemonitors.yaml'),
    'servicemonitors.monitoring.coreos.com',
  );
  await installCrd(
    monitoringCrd('monitoring.coreos.com_podmonitors.yaml'),
    'podmonitors.monitoring.coreos.com',
  );
  await installCrd(
    monitoringCrd('monitoring.coreos.com_prometheusrules.yaml'),
    'prometheusrules.monitoring.coreos.com',
  );
  const own = (await readFile(join(PROJECT_ROOT, 'deploy/base/namespace.yaml'), 'utf8')).replace(
    'name: switchyard-system',
    `name: ${namespace}`,
  );
  const created = await cluster.kubectl(['create', '--save-config', '-f', '-'], { input: own });
  expect(created.stderr).toBe('');
});

afterAll(async () => {
  await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A kustomization in a directory of its own, over deploy/ folders, with `extra` fields. */
async function overlay(resources: string[], components: string[], extra: string[] = []): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-deploy-'));
  dirs.push(dir);
  const path = (folder: string) => relative(dir, join(PROJECT_ROOT, 'deploy', folder));
  await writeFile(
    join(dir, 'kustomization.yaml'),
    [
      'apiVersion: kustomize.config.k8s.io/v1beta1',
      'kind: Kustomization',
      'resources:',
      ...resources.map((r) => `  - ${r.endsWith('.yaml') ? r : path(r)}`),
      ...(components.length > 0 ? ['components:', ...components.map((c) => `  - ${path(c)}`)] : []),
      ...extra,
      '',
    ].join('\n'),
  );
  return dir;
}

async function rendered(dir: string): Promise<KubernetesObject[]> {
  const res = await cluster.kubectl(['kustomize', dir]);
  expect(res.stderr).toBe('');
  return loadAllYaml(res.stdout) as KubernetesObject[];
}

/**
 * What the dry run warns about. Other files of the run create some of the same cluster-scoped
 * objects (the CRDs, the ClusterRoles) imperatively, so `kubectl apply` notes they lack its
 * last-applied annotation: an artifact of sharing the cluster, not of the manifests.
 */
function warningsOf(stderr: string): string[] {
  return stderr
    .split('\n')
    .filter((l) => l.trim() !== '')
    .filter((l) => !l.includes('is missing the kubectl.kubernetes.io/last-applied-configuration annotation'));
}

const dryRun = (dir: string) =>
  cluster.kubectl(['apply', '--dry-run=server', '-k', dir], { timeoutMs: 60_000 });

describe('every overlay of deploy/', () => {
  it.each([
    { name: 'default', resources: ['default'], components: [] },
    { name: 'external-nats', resources: ['external-nats'], components: [] },
    { name: 'default with autoscaling', resources: ['default'], components: ['autoscaling'] },
    { name: 'default with monitoring', resources: ['default'], components: ['monitoring'] },
    { name: 'nats-cluster', resources: ['nats-cluster'], components: [] },
  ])('$name renders and passes the apiserver’s dry run without a warning', async ({
    resources,
    components,
  }) => {
    const dir = await overlay(resources, components, [`namespace: ${namespace}`]);
    const objects = await rendered(dir);
    const res = await dryRun(dir);
    expect(warningsOf(res.stderr)).toEqual([]);
    expect(res.code).toBe(0);
    const accepted = res.stdout.split('\n').filter((l) => l.endsWith('(server dry run)'));
    expect(accepted).toHaveLength(objects.length);
  });

  it.each([
    'default',
    'external-nats',
    'nats-cluster',
  ])('%s: every Job can be applied again by an upgrade: named for this release, deleted once finished', async (name) => {
    const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const jobs = (await rendered(await overlay([name], []))).filter(
      (o) => o.kind === 'Job',
    ) as (KubernetesObject & {
      spec: { ttlSecondsAfterFinished?: number };
    })[];
    expect(jobs.map((j) => j.metadata?.labels?.['app.kubernetes.io/component']).sort()).toEqual([
      'bus-setup',
      'nats-credentials',
    ]);
    for (const job of jobs) {
      expect(job.metadata?.name, 'a Job template cannot change: a new release needs a new name').toMatch(
        new RegExp(`-v${version.replaceAll(/[^a-z0-9]/g, '-')}$`),
      );
      expect(job.spec.ttlSecondsAfterFinished).toBeGreaterThan(0);
    }
  });

  it.each([
    { name: 'default', resources: ['default'], components: [] },
    {
      name: 'external-nats with autoscaling and monitoring',
      resources: ['external-nats'],
      components: ['autoscaling', 'monitoring'],
    },
    { name: 'nats-cluster', resources: ['nats-cluster'], components: [] },
  ])('$name: every object carries the Kubernetes recommended labels, at this release’s version', async ({
    resources,
    components,
  }) => {
    const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    const objects = await rendered(await overlay(resources, components));
    expect(objects.length).toBeGreaterThan(0);
    for (const o of objects) {
      expect(o.metadata?.labels, `${o.kind}/${o.metadata?.name}`).toMatchObject({
        'app.kubernetes.io/name': 'switchyard',
        'app.kubernetes.io/instance': 'switchyard',
        'app.kubernetes.io/version': version,
        'app.kubernetes.io/managed-by': 'kustomize',
        'app.kubernetes.io/part-of': 'switchyard',
        'app.kubernetes.io/component': expect.stringMatching(/^[a-z][a-z0-9-]*$/),
      });
    }
  });

  it('default holds one Deployment per worker kind, each probed, restricted and budgeted', async () => {
    const objects = await rendered(await overlay(['default'], []));
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata?.name).sort()).toEqual(
      [
        'admission',
        'assign',
        'config-status',
        'handover',
        'instances',
        'lease-aggregate',
        'router',
        'watchers',
      ].map((n) => `switchyard-${n}`),
    );
    const budgets = new Set(
      objects.filter((o) => o.kind === 'PodDisruptionBudget').map((o) => o.metadata?.name),
    );
    for (const d of deployments) {
      const spec = (d as { spec: { template: { spec: PodSpec } } }).spec.template.spec;
      expect(budgets.has(d.metadata?.name), `${d.metadata?.name} budget`).toBe(true);
      expect(spec.securityContext, `${d.metadata?.name}`).toMatchObject({
        runAsNonRoot: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      for (const c of spec.containers) {
        expect(c.readinessProbe?.httpGet, `${d.metadata?.name} readiness`).toBeDefined();
        expect(c.livenessProbe?.httpGet, `${d.metadata?.name} liveness`).toBeDefined();
        expect(c.resources?.requests, `${d.metadata?.name} requests`).toBeDefined();
        expect(c.resources?.limits?.memory, `${d.metadata?.name} memory limit`).toBeDefined();
        expect(c.securityContext, `${d.metadata?.name}`).toMatchObject({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
      }
    }
  });

  it('external-nats points every workload that uses NATS at the address of its nats-address.yaml', async () => {
    const objects = await rendered(await overlay(['external-nats'], []));
    const urls = objects.flatMap((o) =>
      ((o as { spec?: { template?: { spec?: PodSpec } } }).spec?.template?.spec?.containers ?? []).flatMap(
        (c) => (c.env ?? []).filter((e) => e.name === 'SWITCHYARD_NATS_URL').map((e) => e.value),
      ),
    );
    expect(urls.length).toBe(8);
    expect(new Set(urls)).toEqual(new Set(['nats://nats.nats.svc:4222']));
    expect(
      objects.some((o) => o.kind === 'StatefulSet' || o.metadata?.name === 'switchyard-nats-address'),
    ).toBe(false);
  });

  it('one images: entry renames the workers and the image the instances handler renders replicas with', async () => {
    const image = 'registry.test:5000/team/switchyard:1.2.3';
    const objects = await rendered(
      await overlay(
        ['default'],
        [],
        [
          'images:',
          '  - name: switchyard',
          '    newName: registry.test:5000/team/switchyard',
          '    newTag: 1.2.3',
        ],
      ),
    );
    const containers = objects.flatMap(
      (o) => (o as { spec?: { template?: { spec?: PodSpec } } }).spec?.template?.spec?.containers ?? [],
    );
    const projectImages = containers.map((c) => c.image).filter((i) => i?.includes('switchyard'));
    expect(projectImages.length).toBeGreaterThanOrEqual(8);
    expect(new Set(projectImages)).toEqual(new Set([image]));
    const rendersWith = containers.flatMap((c) =>
      (c.env ?? []).filter((e) => e.name === 'SWITCHYARD_IMAGE').map((e) => e.value),
    );
    expect(rendersWith).toEqual([image]);
    const untouched = containers.flatMap((c) => (c.env ?? []).map((e) => e.value ?? ''));
    expect(untouched.filter((v) => v.startsWith('/etc/switchyard/')).length).toBeGreaterThan(0);
  });

  it.each([
    'default',
    'nats-cluster',
  ])('%s runs NATS at the server line the project is tested with', async (name) => {
    const goMod = await readFile(join(PROJECT_ROOT, 'tools/nats-server/go.mod'), 'utf8');
    const version = /github\.com\/nats-io\/nats-server\/v2 v(\S+)/.exec(goMod)?.[1];
    const nats = (await rendered(await overlay([name], []))).find((o) => o.kind === 'StatefulSet') as
      | { spec: { template: { spec: PodSpec } } }
      | undefined;
    expect(version).toBeDefined();
    expect(nats?.spec.template.spec.containers[0]?.image).toBe(`nats:${version}`);
  });

  it('the dry run can fail: a mistyped ScaledObject field and a Pod allowed to escalate are refused or warned', async () => {
    const typoDir = await overlay(['typo.yaml'], [], [`namespace: ${namespace}`]);
    await writeFile(
      join(typoDir, 'typo.yaml'),
      [
        'apiVersion: keda.sh/v1alpha1',
        'kind: ScaledObject',
        'metadata: { name: typo }',
        'spec:',
        '  scaleTargetRef: { name: switchyard-handover }',
        '  minReplicas: 2',
        '  triggers: [{ type: nats-jetstream, metadata: { stream: WORK } }]',
        '',
      ].join('\n'),
    );
    const mistyped = await dryRun(typoDir);
    expect(mistyped.code).not.toBe(0);
    expect(mistyped.stderr).toMatch(/unknown field "spec.minReplicas"/);

    const monitorTypo = await overlay(['typo.yaml'], [], [`namespace: ${namespace}`]);
    await writeFile(
      join(monitorTypo, 'typo.yaml'),
      [
        'apiVersion: monitoring.coreos.com/v1',
        'kind: ServiceMonitor',
        'metadata: { name: typo }',
        'spec:',
        '  selector: { matchLabels: { app: x } }',
        '  endpoints: [{ port: metrics, scrapeInterval: 30s }]',
        '',
      ].join('\n'),
    );
    const monitorMistyped = await dryRun(monitorTypo);
    expect(monitorMistyped.code).not.toBe(0);
    expect(monitorMistyped.stderr).toMatch(/unknown field "spec.endpoints\[0\].scrapeInterval"/);

    const escalating = await dryRun(
      await overlay(
        ['workers'],
        [],
        [
          `namespace: ${namespace}`,
          'patches:',
          '  - target: { kind: Deployment, name: switchyard-router }',
          '    patch: |-',
          '      - op: replace',
          '        path: /spec/template/spec/containers/0/securityContext/allowPrivilegeEscalation',
          '        value: true',
        ],
      ),
    );
    expect(escalating.stderr).toMatch(/would violate PodSecurity "restricted:latest"/);
  });
});

describe('the NATS server’s certificate renews and is served without anyone acting', () => {
  it.each([
    'default',
    'nats-cluster',
  ])('%s: a daily CronJob runs the credentials Job’s command, and a reloader beside each server may signal it', async (name) => {
    const objects = await rendered(await overlay([name], []));
    const job = objects.find(
      (o) => o.kind === 'Job' && o.metadata?.labels?.['app.kubernetes.io/component'] === 'nats-credentials',
    ) as { spec: { template: { spec: JobPodSpec } } } | undefined;
    const cron = objects.find((o) => o.kind === 'CronJob') as
      | { spec: { concurrencyPolicy?: string; jobTemplate: { spec: { template: { spec: JobPodSpec } } } } }
      | undefined;
    const renewal = cron?.spec.jobTemplate.spec.template.spec;
    expect(cron?.spec.concurrencyPolicy).toBe('Forbid');
    // The same run as the Job: its identity, image and arguments, the server certificate included.
    expect(renewal?.serviceAccountName).toBe(job?.spec.template.spec.serviceAccountName);
    expect(renewal?.containers[0]?.image).toBe(job?.spec.template.spec.containers[0]?.image);
    expect(renewal?.containers[0]?.args).toEqual(job?.spec.template.spec.containers[0]?.args);
    expect(renewal?.containers[0]?.args).toContain('--server-certificate');

    const nats = objects.find((o) => o.kind === 'StatefulSet') as unknown as NatsStatefulSet;
    const pod = nats.spec.template.spec as NatsStatefulSet['spec']['template']['spec'] & {
      shareProcessNamespace?: boolean;
    };
    const reloader = pod.containers.find((c) => c.name === 'reloader') as
      | (NatsContainer & {
          image?: string;
          args?: string[];
          volumeMounts?: Mount[];
          securityContext?: object;
        })
      | undefined;
    const server = pod.containers.find((c) => c.name === 'nats') as NatsContainer & {
      volumeMounts?: Mount[];
    };
    expect(pod.shareProcessNamespace, 'the reloader must see the server’s process').toBe(true);
    expect(reloader?.image).toBe(job?.spec.template.spec.containers[0]?.image);
    // Runs as the Pod's user, the server's: a container-level user would keep it from signalling.
    expect(reloader?.securityContext).not.toHaveProperty('runAsUser');
    const configMap = objects.find(
      (o) =>
        o.kind === 'ConfigMap' &&
        o.metadata?.name === pod.volumes.find((v) => v.name === 'config')?.configMap?.name,
    ) as { data: Record<string, string> } | undefined;
    const pidFile = /^pid_file: (\S+)$/m.exec(configMap?.data['nats.conf'] ?? '')?.[1];
    const certFile = /cert_file: "([^"]+)\/tls\.crt"/.exec(configMap?.data['nats.conf'] ?? '')?.[1];
    expect(reloader?.args).toEqual(['nats-reloader', `--tls-dir=${certFile}`, `--pid-file=${pidFile}`]);
    // It reads what the server reads, through the same volumes, and writes nothing.
    const mountOf = (c: { volumeMounts?: Mount[] } | undefined, path: string | undefined) =>
      c?.volumeMounts?.find((m) => path === m.mountPath || path?.startsWith(`${m.mountPath}/`));
    for (const path of [certFile, pidFile]) {
      expect(mountOf(reloader, path)?.name, path).toBe(mountOf(server, path)?.name);
      expect(mountOf(reloader, path)?.readOnly, path).toBe(true);
    }
  });
});

describe('the NATS monitoring port behind credentials', () => {
  it.each([
    'default',
    'nats-cluster',
  ])('%s: the server’s monitoring is on loopback, the gate answers on the Pod’s port, and the probes go through it', async (name) => {
    const objects = await rendered(await overlay([name], []));
    const nats = objects.find((o) => o.kind === 'StatefulSet') as unknown as NatsStatefulSet;
    const pod = nats.spec.template.spec;
    const natsConf =
      (
        objects.find(
          (o) =>
            o.kind === 'ConfigMap' &&
            o.metadata?.name === pod.volumes.find((v) => v.name === 'config')?.configMap?.name,
        ) as { data: Record<string, string> } | undefined
      )?.data['nats.conf'] ?? '';
    const upstream = /^http: (127\.0\.0\.1:\d+)$/m.exec(natsConf)?.[1];
    expect(upstream, 'monitoring bound to loopback').toBeDefined();
    expect(natsConf).not.toMatch(/^http_port:/m);
    type Container = NatsContainer & {
      args?: string[];
      ports?: { name: string; containerPort: number }[];
      livenessProbe?: { httpGet?: { port?: number | string } };
      volumeMounts?: Mount[];
    };
    const containers = pod.containers as Container[];
    const gate = containers.find((c) => c.name === 'monitor-gate');
    const server = containers.find((c) => c.name === 'nats');
    const monitorPort = gate?.ports?.find((p) => p.name === 'monitor')?.containerPort;
    expect(gate?.args).toEqual([
      'nats-monitor-gate',
      `--port=${monitorPort}`,
      `--upstream=http://${upstream}`,
      '--password-file=/etc/nats-monitor/password',
    ]);
    // Only the gate has the port the Service and the NetworkPolicies name.
    expect(containers.flatMap((c) => (c.ports ?? []).filter((p) => p.name === 'monitor'))).toHaveLength(1);
    for (const probe of [server?.startupProbe, server?.readinessProbe, server?.livenessProbe])
      expect((probe as { httpGet?: { port?: unknown } } | undefined)?.httpGet?.port).toBe(monitorPort);
    // The gate's password: the credentials Secret's `monitor` key alone, mounted where it reads it.
    const mount = gate?.volumeMounts?.find((m) => m.mountPath === '/etc/nats-monitor');
    const volume = (pod.volumes as PodVolume[]).find((v) => v.name === mount?.name);
    expect(volume?.secret).toMatchObject({
      secretName: 'switchyard-nats-credentials',
      items: [{ key: 'monitor', path: 'password' }],
    });
    expect(mount?.readOnly).toBe(true);
  });
});

describe('the NATS storage scraped', () => {
  it.each([
    'default',
    'nats-cluster',
  ])('%s with monitoring: the NATS PodMonitor selects the server Pods at the gate’s /metrics', async (name) => {
    const objects = await rendered(await overlay([name], ['monitoring']));
    const nats = objects.find((o) => o.kind === 'StatefulSet') as unknown as NatsStatefulSet & {
      spec: { template: { metadata: { labels: Record<string, string> } } };
    };
    const monitor = objects.find((o) => o.kind === 'PodMonitor' && o.metadata?.name === 'switchyard-nats') as
      | {
          spec: {
            selector: { matchLabels: Record<string, string> };
            podMetricsEndpoints: { port: string; path: string }[];
          };
        }
      | undefined;
    expect(monitor, 'the NATS PodMonitor').toBeDefined();
    expect(nats.spec.template.metadata.labels).toMatchObject(
      monitor?.spec.selector.matchLabels ?? { none: 'x' },
    );
    const endpoint = monitor?.spec.podMetricsEndpoints[0];
    expect(endpoint?.path).toBe('/metrics');
    const gate = (nats.spec.template.spec.containers as { name: string; ports?: { name: string }[] }[]).find(
      (c) => c.name === 'monitor-gate',
    );
    expect(gate?.ports?.map((p) => p.name)).toContain(endpoint?.port);
  });
});

interface Mount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
}

interface JobPodSpec {
  serviceAccountName?: string;
  containers: { image?: string; args?: string[] }[];
}

describe('deploy/nats-cluster', () => {
  let objects: KubernetesObject[] = [];
  let nats: NatsStatefulSet;
  let server: NatsContainer;
  /** The ConfigMap the servers mount: nats.conf and authorization.conf. */
  let config: Record<string, string> = {};

  beforeAll(async () => {
    objects = await rendered(await overlay(['nats-cluster'], []));
    nats = objects.find((o) => o.kind === 'StatefulSet') as unknown as NatsStatefulSet;
    const [container] = nats.spec.template.spec.containers;
    if (!container) throw new Error('the StatefulSet has no container');
    server = container;
    const mounted = nats.spec.template.spec.volumes.find((v) => v.name === 'config')?.configMap?.name;
    const configMap = objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === mounted) as
      | { data: Record<string, string> }
      | undefined;
    config = configMap?.data ?? {};
  });

  const routesOf = (conf: string) =>
    /routes:\s*\[([^\]]*)\]/
      .exec(conf)?.[1]
      ?.split(/[\s,]+/)
      .filter((r) => r !== '');

  it('runs three servers, each routing to all three by their Pod names on the headless Service', async () => {
    expect(nats.spec.replicas).toBe(3);
    const headless = objects.find(
      (o) => o.kind === 'Service' && o.metadata?.name === nats.spec.serviceName,
    ) as
      | {
          spec: { clusterIP?: string; publishNotReadyAddresses?: boolean; selector?: Record<string, string> };
        }
      | undefined;
    expect(headless?.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    expect(headless?.spec.selector).toEqual(nats.spec.selector.matchLabels);
    expect(routesOf(config['nats.conf'] ?? '')).toEqual(
      [0, 1, 2].map((i) => `nats://nats-${i}.${nats.spec.serviceName}.switchyard-system.svc:6222`),
    );
    // Each server is known to the cluster by its own Pod's name.
    expect(config['nats.conf']).toMatch(/^server_name: \$POD_NAME$/m);
    expect(server.env.find((e) => e.name === 'POD_NAME')?.valueFrom).toEqual({
      fieldRef: { fieldPath: 'metadata.name' },
    });
    // deploy/nats's users, not a copy that could drift from the generated block.
    expect(config['authorization.conf']).toBe(
      await readFile(join(PROJECT_ROOT, 'deploy/nats/authorization.conf'), 'utf8'),
    );
  });

  it('keeps a quorum through a drain, and a stopping server hands over in lame duck before it is killed', () => {
    const budget = objects.find((o) => o.kind === 'PodDisruptionBudget' && o.metadata?.name === 'nats') as
      | { spec: { maxUnavailable?: number; selector?: { matchLabels?: Record<string, string> } } }
      | undefined;
    expect(budget?.spec.maxUnavailable).toBe(1);
    expect(budget?.spec.selector?.matchLabels).toEqual(nats.spec.selector.matchLabels);
    const lameDuck = /^lame_duck_duration: (\d+)s$/m.exec(config['nats.conf'] ?? '')?.[1];
    expect(lameDuck).toBe('30');
    expect(nats.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(lameDuck));
    // Ready only once caught up with the cluster, so a rolling restart never stops a second
    // server while the first is catching up; all three start at once, since none is ready alone.
    expect(server.readinessProbe?.httpGet?.path).toBe('/healthz');
    expect(server.startupProbe?.httpGet?.path).toBe('/healthz?js-enabled-only=true');
    expect(nats.spec.podManagementPolicy).toBe('Parallel');
    expect(
      nats.spec.template.spec.topologySpreadConstraints?.map((t) => [t.topologyKey, t.whenUnsatisfiable]),
    ).toEqual([
      ['kubernetes.io/hostname', 'DoNotSchedule'],
      ['topology.kubernetes.io/zone', 'ScheduleAnyway'],
    ]);
    expect(server.env.find((e) => e.name === 'GOMEMLIMIT')?.valueFrom).toEqual({
      resourceFieldRef: { containerName: server.name, resource: 'limits.memory' },
    });
  });

  it('keeps every stream on three servers: each workload that uses NATS runs with bus.streamReplicas 3, at deploy/default’s address', async () => {
    const natsEnv = (list: KubernetesObject[]) =>
      list.flatMap((o) =>
        ((o as { spec?: { template?: { spec?: PodSpec } } }).spec?.template?.spec?.containers ?? [])
          .map((c) => new Map((c.env ?? []).map((e) => [e.name, e.value])))
          .filter((env) => env.has('SWITCHYARD_NATS_URL')),
      );
    const workloads = natsEnv(objects);
    expect(workloads.length).toBe(8);
    for (const env of workloads) expect(env.get('SWITCHYARD_BUS_STREAM_REPLICAS')).toBe('3');
    const defaults = natsEnv(await rendered(await overlay(['default'], [])));
    expect(new Set(workloads.map((env) => env.get('SWITCHYARD_NATS_URL')))).toEqual(
      new Set(defaults.map((env) => env.get('SWITCHYARD_NATS_URL'))),
    );
    expect(defaults.some((env) => env.has('SWITCHYARD_BUS_STREAM_REPLICAS'))).toBe(false);
  });

  it('requires TLS: the servers mount their certificate, and every workload that connects verifies it against the CA alone', () => {
    expect(config['nats.conf']).toMatch(/^tls \{[^}]*cert_file: "\/etc\/nats-tls\/tls\.crt"/m);
    // The routes too, from the same mounted files, verifying both ends.
    const routeTls = /^cluster \{[\s\S]*?^ {2}tls \{([^}]*)\}/m.exec(config['nats.conf'] ?? '')?.[1] ?? '';
    for (const line of [
      'cert_file: "/etc/nats-tls/tls.crt"',
      'key_file: "/etc/nats-tls/tls.key"',
      'ca_file: "/etc/nats-tls/ca.crt"',
      'verify: true',
    ])
      expect(routeTls, 'the cluster block has no tls {} with the mounted files').toContain(line);
    const tlsVolume = (
      nats.spec.template.spec.volumes as { name: string; secret?: { secretName?: string } }[]
    ).find((v) => v.secret?.secretName === 'switchyard-nats-tls');
    expect(tlsVolume, 'the servers do not mount switchyard-nats-tls').toBeDefined();
    const connecting = objects.flatMap((o) => {
      const pod = (o as { spec?: { template?: { spec?: PodSpec & { volumes?: PodVolume[] } } } }).spec
        ?.template?.spec;
      return (pod?.containers ?? [])
        .filter((c) => (c.env ?? []).some((e) => e.name === 'SWITCHYARD_NATS_URL'))
        .map((c) => ({ name: o.metadata?.name, env: c.env ?? [], volumes: pod?.volumes ?? [] }));
    });
    expect(connecting.length).toBe(8);
    for (const w of connecting) {
      expect(w.env.find((e) => e.name === 'SWITCHYARD_NATS_TLS_CA_FILE')?.value, w.name).toBe(
        '/etc/switchyard/nats-ca/ca.crt',
      );
      // The CA alone: the server's key in the same Secret never reaches a client.
      const ca = w.volumes.find((v) => v.secret?.secretName === 'switchyard-nats-tls');
      expect(
        ca?.secret?.items?.map((i) => i.key),
        w.name,
      ).toEqual(['ca.crt']);
    }
  });

  /**
   * The rendered configuration in a directory of its own, store and pid file moved into it, and
   * the TLS Secret's files moved to `tls`'s: a certificate of the project's issuer with the usages
   * the nats-credentials Job gives it (serverAuth and clientAuth), naming 127.0.0.1, where the
   * routes below dial, in place of the Pods' names. Servers that share `tls` trust each other.
   */
  async function writeConfig(dir: string, natsConf: string, tls: LocalNatsTls): Promise<string> {
    await mkdir(join(dir, 'jetstream'), { recursive: true });
    await writeFile(join(dir, 'authorization.conf'), config['authorization.conf'] ?? '');
    const file = join(dir, 'nats.conf');
    await writeFile(
      file,
      natsConf
        .replace(/^(\s*)store_dir:.*$/m, `$1store_dir: "${join(dir, 'jetstream')}"`)
        .replace(/^pid_file:.*$/m, `pid_file: "${join(dir, 'nats.pid')}"`)
        .replaceAll('/etc/nats-tls/', `${dirname(tls.paths.certFile)}/`),
    );
    return file;
  }

  /** `nats-server -t`: parses the configuration, resolving its variables, and starts nothing. */
  async function configTest(file: string, pod: string): Promise<{ code: number; output: string }> {
    try {
      const { stdout, stderr } = await execFileAsync(natsServerBinary(), ['-t', '-c', file], {
        env: childEnv(podEnv(server, pod)),
      });
      return { code: 0, output: stdout + stderr };
    } catch (err) {
      const failed = err as { code?: number; stdout?: string; stderr?: string };
      return { code: failed.code ?? -1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
    }
  }

  it('nats-server accepts its configuration with each Pod’s environment, and refuses a typo in the cluster block', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'switchyard-nats-cluster-'));
    dirs.push(dir);
    const tls = await LocalNatsTls.create(join(dir, 'tls'), Date.now());
    const file = await writeConfig(dir, config['nats.conf'] ?? '', tls);
    for (const pod of ['nats-0', 'nats-1', 'nats-2']) {
      const tested = await configTest(file, pod);
      expect(tested.output).toMatch(/configuration file .* is valid/);
      expect(tested.code).toBe(0);
    }
    const typo = await writeConfig(
      join(dir, 'typo'),
      (config['nats.conf'] ?? '').replace('routes:', 'route:'),
      tls,
    );
    const refused = await configTest(typo, 'nats-0');
    expect(refused.output).toMatch(/unknown field "route"/);
    expect(refused.code).not.toBe(0);
  });

  it('three nats-server processes started with its configuration form one JetStream cluster, routed in TLS; a server of another CA never joins', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'switchyard-nats-cluster-'));
    dirs.push(dir);
    const log = pino({ level: 'warn' });
    // One certificate for the three, as the one Secret all Pods mount.
    const tls = await LocalNatsTls.create(join(dir, 'tls'), Date.now());
    // The Pods' DNS names and fixed ports become loopback ports: flags override the
    // configuration's listen ports and routes; everything else is as rendered.
    const nodes = await Promise.all(
      ['nats-0', 'nats-1', 'nats-2'].map(async (pod) => ({
        pod,
        port: await freePort(),
        monitor: await freePort(),
        cluster: await freePort(),
      })),
    );
    const routes = nodes.map((n) => `nats://127.0.0.1:${n.cluster}`).join(',');
    const processes: ManagedProcess[] = [];
    const start = async (node: (typeof nodes)[number], files: LocalNatsTls) => {
      const file = await writeConfig(join(dir, node.pod), config['nats.conf'] ?? '', files);
      const started = new ManagedProcess(
        {
          name: node.pod,
          command: natsServerBinary(),
          args: [
            '-c',
            file,
            '-a',
            '127.0.0.1',
            '-p',
            String(node.port),
            '-m',
            String(node.monitor),
            '--cluster',
            `nats://127.0.0.1:${node.cluster}`,
            '--routes',
            routes,
          ],
          env: childEnv(podEnv(server, node.pod)),
          logFile: join(dir, `${node.pod}.log`),
        },
        log,
      );
      processes.push(started);
    };
    const monitor = async <T>(node: (typeof nodes)[number], path: string) =>
      (await (await fetch(`http://127.0.0.1:${node.monitor}${path}`)).json()) as T;
    const routedTo = async (node: (typeof nodes)[number]) =>
      new Set(
        (await monitor<{ routes: { remote_name: string }[] }>(node, '/routez')).routes.map(
          (r) => r.remote_name,
        ),
      );
    try {
      for (const node of nodes) await start(node, tls);
      for (const node of nodes) {
        // /healthz without options: JetStream clustered, a meta leader, this server current with it.
        await waitFor(`${node.pod} healthy in the cluster`, async () => {
          if (processes.some((p) => !p.running)) throw new Error(`a server exited: see ${dir}`);
          const res = await fetch(`http://127.0.0.1:${node.monitor}/healthz`).catch(() => undefined);
          return res?.ok ? true : undefined;
        });
        const varz = await monitor<{
          server_name: string;
          cluster: { name: string; tls_required?: boolean; tls_verify?: boolean };
          jetstream: { meta?: { cluster_size: number; leader?: string } };
        }>(node, '/varz');
        expect(varz.server_name).toBe(node.pod);
        expect(varz.cluster).toMatchObject({ name: 'switchyard-nats', tls_required: true, tls_verify: true });
        expect(varz.jetstream.meta?.cluster_size).toBe(3);
        expect(nodes.map((n) => n.pod)).toContain(varz.jetstream.meta?.leader);
      }

      // A fourth server, as configured, whose certificate another CA signed: the three refuse its
      // route handshakes (their logs say so), and it is routed to by none of them.
      const handshakeErrors = async () =>
        (await Promise.all(nodes.map((n) => readFile(join(dir, `${n.pod}.log`), 'utf8').catch(() => ''))))
          .join('')
          .split('\n')
          .filter((line) => line.includes('TLS route handshake error')).length;
      const before = await handshakeErrors();
      const rogue = {
        pod: 'nats-3',
        port: await freePort(),
        monitor: await freePort(),
        cluster: await freePort(),
      };
      await start(rogue, await LocalNatsTls.create(join(dir, 'rogue-tls'), Date.now()));
      await waitFor('the three to refuse the fourth server’s routes', async () =>
        (await handshakeErrors()) >= before + 2 ? true : undefined,
      );
      // It retries each second: two more rounds for a route to form if one could.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect([...(await routedTo(rogue))], 'the server of another CA routed to the cluster').toEqual([]);
      for (const node of nodes)
        expect(await routedTo(node), `${node.pod} took a route from a server of another CA`).not.toContain(
          rogue.pod,
        );
      expect(await routedTo(nodes[0] as (typeof nodes)[number])).toEqual(new Set(['nats-1', 'nats-2']));
    } finally {
      await Promise.all(processes.map((p) => p.stop()));
    }
  });
});

/**
 * The environment the kubelet gives `container` in Pod `pod`: its values, its Pod's name, its
 * memory limit in bytes, and a stand-in for each Secret key. Any other source fails the test
 * until it is taught here.
 */
function podEnv(container: NatsContainer, pod: string): Record<string, string> {
  return Object.fromEntries(
    container.env.map((e) => {
      if (e.value !== undefined) return [e.name, e.value];
      if (e.valueFrom?.secretKeyRef) return [e.name, `password-of-${e.valueFrom.secretKeyRef.key}`];
      if (e.valueFrom?.fieldRef?.fieldPath === 'metadata.name') return [e.name, pod];
      if (e.valueFrom?.resourceFieldRef?.resource === 'limits.memory')
        return [e.name, String(bytesOf(container.resources?.limits?.memory ?? ''))];
      throw new Error(`no stand-in for the environment variable ${e.name}`);
    }),
  );
}

function bytesOf(quantity: string): number {
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`a memory quantity in Mi or Gi expected, got ${quantity}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 2 ** 30 : 2 ** 20);
}

interface NatsContainer {
  name: string;
  env: {
    name: string;
    value?: string;
    valueFrom?: {
      secretKeyRef?: { key: string };
      fieldRef?: { fieldPath: string };
      resourceFieldRef?: { containerName?: string; resource: string };
    };
  }[];
  readinessProbe?: { httpGet?: { path?: string } };
  startupProbe?: { httpGet?: { path?: string } };
  resources?: { limits?: { memory?: string } };
}

interface NatsStatefulSet {
  spec: {
    replicas: number;
    serviceName: string;
    podManagementPolicy?: string;
    selector: { matchLabels: Record<string, string> };
    template: {
      spec: {
        terminationGracePeriodSeconds?: number;
        topologySpreadConstraints?: { topologyKey: string; whenUnsatisfiable: string }[];
        containers: NatsContainer[];
        volumes: { name: string; configMap?: { name: string } }[];
      };
    };
  };
}

interface PodVolume {
  name: string;
  secret?: { secretName?: string; items?: { key: string; path: string }[] };
}

interface PodSpec {
  securityContext?: Record<string, unknown>;
  containers: {
    image?: string;
    env?: { name: string; value?: string }[];
    readinessProbe?: { httpGet?: unknown };
    livenessProbe?: { httpGet?: unknown };
    resources?: { requests?: unknown; limits?: { memory?: string } };
    securityContext?: Record<string, unknown>;
  }[];
}

type Access = [verb: string, group: string, resource: string, namespace?: string, name?: string];

/**
 * What each component's identity may do (`allow`) and a sample of what it must not (`deny`):
 * its reads come from the bus, so no worker but the watchers may list or watch anything, and
 * none may read a Secret in bulk.
 */
const ACCESS: Record<string, { allow: Access[]; deny: Access[] }> = {
  watchers: {
    allow: [
      ['list', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['watch', 'switchyard.dev', 'crdconversionconfigs'],
      ['watch', 'coordination.k8s.io', 'leases', 'switchyard-system'],
      ['list', 'discovery.k8s.io', 'endpointslices', 'switchyard-system'],
      ['create', 'events.k8s.io', 'events', 'default'],
    ],
    deny: [
      ['patch', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['list', '', 'secrets', 'switchyard-system'],
      ['list', '', 'pods', 'switchyard-system'],
      ['patch', 'switchyard.dev', 'crdconversionconfigs/status'],
    ],
  },
  router: {
    allow: [],
    deny: [
      ['list', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['get', 'switchyard.dev', 'crdconversionconfigs'],
      ['create', 'events.k8s.io', 'events', 'default'],
    ],
  },
  assign: {
    allow: [
      ['patch', 'switchyard.dev', 'crdconversionconfigs/status'],
      ['patch', 'switchyard.dev', 'conversionwebhookservers/status'],
      ['create', 'events.k8s.io', 'events', 'default'],
    ],
    deny: [
      ['patch', 'switchyard.dev', 'crdconversionconfigs'],
      ['patch', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['list', 'switchyard.dev', 'crdconversionconfigs'],
      ['create', 'events.k8s.io', 'events', 'kube-system'],
    ],
  },
  'lease-aggregate': {
    allow: [['patch', 'switchyard.dev', 'conversionwebhookservers/status']],
    deny: [
      ['list', 'coordination.k8s.io', 'leases', 'switchyard-system'],
      ['patch', 'coordination.k8s.io', 'leases', 'switchyard-system'],
      ['patch', 'switchyard.dev', 'crdconversionconfigs/status'],
    ],
  },
  handover: {
    allow: [
      ['patch', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['patch', 'apiextensions.crossplane.io', 'compositeresourcedefinitions'],
      ['patch', 'switchyard.dev', 'crdconversionconfigs/status'],
      ['create', 'events.k8s.io', 'events', 'default'],
    ],
    deny: [
      ['delete', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['create', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['list', '', 'secrets', 'switchyard-system'],
      ['patch', 'switchyard.dev', 'crdconversionconfigs'],
    ],
  },
  'config-status': {
    allow: [['patch', 'switchyard.dev', 'xrdconversionconfigs/status']],
    deny: [
      ['patch', 'switchyard.dev', 'xrdconversionconfigs'],
      ['patch', 'apiextensions.k8s.io', 'customresourcedefinitions'],
    ],
  },
  instances: {
    allow: [
      ['create', 'apps', 'deployments', 'switchyard-system'],
      ['patch', '', 'secrets', 'switchyard-system'],
      ['create', 'rbac.authorization.k8s.io', 'rolebindings', 'switchyard-system'],
      ['patch', 'switchyard.dev', 'conversionwebhookservers'],
      ['update', 'switchyard.dev', 'conversionwebhookservers/finalizers'],
      // Each instance's replicas get a NetworkPolicy (src/core/instances/network-policy.ts).
      ['create', 'networking.k8s.io', 'networkpolicies', 'switchyard-system'],
      ['patch', 'networking.k8s.io', 'networkpolicies', 'switchyard-system'],
    ],
    deny: [
      ['delete', 'apps', 'deployments', 'switchyard-system'],
      ['delete', 'networking.k8s.io', 'networkpolicies', 'switchyard-system'],
      ['create', 'networking.k8s.io', 'networkpolicies', 'default'],
      ['list', '', 'secrets', 'switchyard-system'],
      // Namespaces that did not opt in (docs/security.md): nothing at all.
      ['get', '', 'secrets', 'kube-system'],
      ['patch', '', 'services', 'default'],
      ['create', 'apps', 'deployments', 'default'],
      ['bind', 'rbac.authorization.k8s.io', 'roles', 'switchyard-system'],
      ['escalate', 'rbac.authorization.k8s.io', 'roles', 'switchyard-system'],
      ['patch', 'apiextensions.k8s.io', 'customresourcedefinitions'],
    ],
  },
  'nats-credentials': {
    allow: [
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-nats-credentials'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-nats-credentials'],
      // The bundled NATS server's certificate and its CA (src/access/nats-server-certificate.ts).
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-nats-tls'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-nats-tls'],
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-nats-ca-key'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-nats-ca-key'],
      ['create', '', 'secrets', 'switchyard-system'],
    ],
    deny: [
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-admission-tls'],
      ['delete', '', 'secrets', 'switchyard-system', 'switchyard-nats-ca-key'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-admission-tls'],
      ['list', '', 'secrets', 'switchyard-system'],
      ['delete', '', 'secrets', 'switchyard-system', 'switchyard-nats-credentials'],
      ['create', '', 'secrets', 'default'],
      ['get', 'apps', 'deployments', 'switchyard-system'],
    ],
  },
  admission: {
    allow: [
      ['list', 'switchyard.dev', 'crdconversionconfigs'],
      ['get', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      // Whether the namespace an instance names opted in, and what instances may ask for.
      ['get', '', 'namespaces'],
      // kustomize's namePrefix renames the ConfigMap and the Role's reference to it alike.
      ['get', '', 'configmaps', 'switchyard-system', `${prefix}switchyard-instance-policy`],
      // Its own certificate: its two Secrets by name, create in its namespace, its caBundle.
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-admission-ca'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-admission-ca'],
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-admission-tls'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-admission-tls'],
      ['create', '', 'secrets', 'switchyard-system'],
      ['get', 'admissionregistration.k8s.io', 'validatingwebhookconfigurations', '', 'switchyard-admission'],
      [
        'patch',
        'admissionregistration.k8s.io',
        'validatingwebhookconfigurations',
        '',
        'switchyard-admission',
      ],
    ],
    deny: [
      ['get', '', 'configmaps', 'switchyard-system', 'switchyard-nats-address'],
      ['list', '', 'namespaces'],
      ['patch', '', 'namespaces'],
      ['watch', 'switchyard.dev', 'crdconversionconfigs'],
      ['create', 'switchyard.dev', 'crdconversionconfigs'],
      ['list', 'apiextensions.k8s.io', 'customresourcedefinitions'],
      ['get', '', 'secrets', 'switchyard-system'],
      ['list', '', 'secrets', 'switchyard-system'],
      ['watch', '', 'secrets', 'switchyard-system'],
      ['get', '', 'secrets', 'switchyard-system', 'switchyard-nats-credentials'],
      ['patch', '', 'secrets', 'switchyard-system', 'switchyard-nats-credentials'],
      ['update', '', 'secrets', 'switchyard-system', 'switchyard-admission-tls'],
      ['delete', '', 'secrets', 'switchyard-system', 'switchyard-admission-ca'],
      ['get', '', 'secrets', 'kube-system', 'switchyard-admission-tls'],
      ['create', '', 'secrets', 'kube-system'],
      ['patch', 'admissionregistration.k8s.io', 'validatingwebhookconfigurations', '', 'other-webhook'],
      [
        'delete',
        'admissionregistration.k8s.io',
        'validatingwebhookconfigurations',
        '',
        'switchyard-admission',
      ],
      ['list', 'admissionregistration.k8s.io', 'validatingwebhookconfigurations'],
      ['patch', 'admissionregistration.k8s.io', 'mutatingwebhookconfigurations', '', 'switchyard-admission'],
    ],
  },
};

describe('the identities deploy/default creates', () => {
  let applied = '';

  beforeAll(async () => {
    await core.createNamespace({ body: { metadata: { name: 'switchyard-system' } } }).catch(() => undefined);
    // deploy/default's RBAC only, every name prefixed: other files of the run share the
    // cluster and create the unprefixed objects themselves.
    const rbac = (await rendered(await overlay(['default'], [], [`namePrefix: ${prefix}`]))).filter((o) =>
      ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'].includes(o.kind ?? ''),
    );
    expect(rbac.every((o) => o.metadata?.name?.startsWith(prefix))).toBe(true);
    applied = rbac.map((o) => JSON.stringify(o)).join('\n');
    const res = await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: applied });
    expect(res.stderr).toBe('');
  });

  afterAll(async () => {
    // Exactly what was applied: never the overlay, whose CRDs the whole run shares.
    if (applied)
      await cluster.kubectl(['delete', '-f', '-', '--ignore-not-found', '--wait=false'], { input: applied });
  });

  const cases = Object.entries(ACCESS).flatMap(([component, { allow, deny }]) => [
    ...allow.map((a) => ({ component, access: a, allowed: true })),
    ...deny.map((a) => ({ component, access: a, allowed: false })),
  ]);

  it.each(cases)('$component: $access.0 $access.2 ($access.1) → allowed $allowed', async ({
    component,
    access,
    allowed,
  }) => {
    const [verb, group, resource, ns, name] = access;
    const [base, subresource] = resource.split('/');
    const account = `${prefix}switchyard-${component}`;
    const review = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:switchyard-system:${account}`,
          groups: [
            'system:serviceaccounts',
            'system:serviceaccounts:switchyard-system',
            'system:authenticated',
          ],
          resourceAttributes: { verb, group, resource: base, subresource, namespace: ns, name },
        },
      },
    });
    expect(review.status?.allowed ?? false).toBe(allowed);
  });
});
