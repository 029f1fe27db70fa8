// An upgrade as a platform team makes it, and, on the cluster it leaves, an operator's command run
// with nothing but a kubeconfig. The upgrade: Switchyard installed from deploy/ as it was before its
// latest change (git), a target served and converting under load, then this checkout's deploy/
// applied over it the same way, with no step between (no Job deleted, no image set twice). It
// holds when the new release's Jobs ran, every Deployment rolled out to the new templates, and
// not one conversion of the load failed or read a wrong value meanwhile (docs/install.md,
// "Upgrading").
import { execFile } from 'node:child_process';
import { lookup } from 'node:dns/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { AppsV1Api, BatchV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NATS_CREDENTIALS_SECRET } from '../../src/access/nats-credentials-secret.ts';
import { kubectlPath, type LocalCluster, startLocalCluster } from '../../src/local-cluster/cluster.ts';
import { installSwitchyard, renderDeploy, SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
import { runKubectl, startPortForward } from '../../src/local-cluster/kubectl.ts';
import { NATS_SERVICE_HOST } from '../../src/local-cluster/nats-tls.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import { ConversionLoad } from '../../src/scenario/conversion-load.ts';
import {
  configStatus,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  handoverReady,
} from '../../src/scenario/fleet.ts';
import { CHAOS_LOAD, loadTarget } from '../chaos/support/fleet.ts';
import { type PreviousDeploy, previousDeploy } from './support/previous-deploy.ts';

const MAIN = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'upgrade-e2e' });
const INSTANCE = 'u1';
const TARGET = 'widgets.upgrade.switchyard.dev';
const CONFIG = 'widgets';
const OBJECTS_NAMESPACE = 'upgrade-objects';

let cluster: LocalCluster;
let admin: KubeConfig;
let previous: PreviousDeploy;
let load: ConversionLoad;
let failed = false;

const install = (deployRoot?: string) =>
  installSwitchyard({
    admin,
    natsUrl: cluster.natsUrl,
    natsCaFile: cluster.natsCaFile,
    natsCredentialsDir: cluster.natsCredentialsDir,
    log,
    timeoutMs: 240_000,
    ...(deployRoot !== undefined && { deployRoot }),
  });

beforeAll(async () => {
  previous = await previousDeploy();
  process.stderr.write(
    `[upgrade-e2e] from deploy/ at ${previous.commit.slice(0, 12)}, before ${previous.change}\n`,
  );
  cluster = await startLocalCluster({ log });
  admin = cluster.kubeConfigFor('admin');
  await install(previous.root);
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: OBJECTS_NAMESPACE } } });
  await createInstance(admin, INSTANCE, { default: true, replicas: 2 });
  await createTwoVersionTarget(admin, TARGET, 'Widget');
  await createRenameConfig(admin, CONFIG, TARGET);
  await waitFor(
    `${TARGET} served by ${INSTANCE} (HandoverReady)`,
    async () => (handoverReady(await configStatus(admin, CONFIG))?.status === 'True' ? true : undefined),
    { timeoutMs: 180_000, intervalMs: 250 },
  );
  load = new ConversionLoad(loadTarget(admin, TARGET, 'Widget', OBJECTS_NAMESPACE), {
    run: 'upgrade',
    ...CHAOS_LOAD,
  });
  await load.start();
}, 900_000);

afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') failed = true;
});

afterAll(async () => {
  if (!cluster) return;
  const keep = failed || process.env.SWITCHYARD_KEEP_CLUSTER === '1';
  await cluster.stop({ keepDir: keep });
  if (keep) process.stderr.write(`[upgrade-e2e] logs kept in ${cluster.dir}\n`);
});

describe('an upgrade from the previous deploy/', () => {
  it('applies this checkout’s deploy/ over it with no other step: its Jobs run, every Deployment rolls out, not one conversion fails', async () => {
    const started = performance.now();
    await install();
    const upgradeSeconds = (performance.now() - started) / 1000;

    const batch = admin.makeApiClient(BatchV1Api);
    const jobs = (await renderDeploy('external-nats')).filter((o) => o.kind === 'Job');
    expect(jobs.length).toBeGreaterThan(0);
    for (const job of jobs) {
      const live = await batch.readNamespacedJob({
        name: job.metadata?.name ?? '',
        namespace: SWITCHYARD_NAMESPACE,
      });
      expect(live.status?.succeeded, job.metadata?.name).toBeGreaterThan(0);
    }
    // The load goes on a while after the last rollout: a replica that went away late shows here.
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const summary = await load.stop();
    process.stderr.write(
      `[upgrade-e2e] upgraded in ${upgradeSeconds.toFixed(1)} s; the load made ${summary.requests} requests, ` +
        `${summary.failures.length} failed, ${summary.wrongValues.length} read a wrong value\n`,
    );
    expect(summary.failures).toEqual([]);
    expect(summary.wrongValues).toEqual([]);
    expect(summary.requests).toBeGreaterThan(50);
    expect(handoverReady(await configStatus(admin, CONFIG))).toMatchObject({ status: 'True' });
  }, 600_000);
});

describe('an operator with only a kubeconfig', () => {
  it('explains a target: the CLI finds the bus, its own NATS user and the CA from the cluster', async () => {
    // Nothing of the bus in the environment: what the person has is a kubeconfig.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('SWITCHYARD_NATS')),
    );
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [MAIN, 'explain', TARGET, `--kubeconfig=${cluster.kubeConfigs.admin}`, '-o', 'json'],
      { env, timeout: 60_000 },
    );
    const [explained] = JSON.parse(stdout) as { target: string; status: { assigned?: string } }[];
    expect(explained).toMatchObject({ target: TARGET, status: { assigned: INSTANCE } });
  }, 90_000);

  it('reaches a bus only the cluster resolves through kubectl port-forward, the certificate verified against the Service’s name', async () => {
    // deploy/'s own address, `nats.switchyard-system.svc`, which nothing outside the cluster
    // resolves. Behind its Service, a Pod relays to the local NATS (which runs outside the node
    // agent), as a NATS Pod serves in a cluster. The workers of namespace BEHIND say that
    // address (a copy of the router's Deployment, scaled to zero, and the Secrets it reads).
    const BEHIND = 'bus-behind-service';
    const core = admin.makeApiClient(CoreV1Api);
    const apps = admin.makeApiClient(AppsV1Api);
    /** A Service in front of the relay Pod, as deploy/nats's `nats` is in front of the server. */
    const relayService = (name: string) =>
      core.createNamespacedService({
        namespace: SWITCHYARD_NAMESPACE,
        body: {
          metadata: { name },
          spec: {
            selector: { app: 'nats-relay' },
            ports: [{ name: 'client', port: 4222, targetPort: 'client' }],
          },
        },
      });
    const [natsHost = '', natsPort = ''] = new URL(cluster.natsUrl.split(',')[0] as string).host.split(':');
    await core.createNamespacedPod({
      namespace: SWITCHYARD_NAMESPACE,
      body: {
        metadata: { name: 'nats-relay', labels: { app: 'nats-relay' } },
        spec: {
          containers: [
            {
              name: 'relay',
              image: 'switchyard:dev',
              command: ['test/fixtures/tcp-relay.ts'],
              env: [{ name: 'UPSTREAM', value: `${natsHost}:${natsPort}` }],
              ports: [{ name: 'client', containerPort: 4222 }],
              readinessProbe: { tcpSocket: { port: 4222 }, periodSeconds: 1 },
              // The namespace enforces the restricted Pod Security Standard.
              securityContext: {
                allowPrivilegeEscalation: false,
                runAsNonRoot: true,
                runAsUser: 65532,
                capabilities: { drop: ['ALL'] },
                seccompProfile: { type: 'RuntimeDefault' },
              },
            },
          ],
        },
      },
    });
    await relayService('nats');
    await core.createNamespace({ body: { metadata: { name: BEHIND } } });
    const router = await apps.readNamespacedDeployment({
      name: 'switchyard-router',
      namespace: SWITCHYARD_NAMESPACE,
    });
    const template = router.spec?.template as NonNullable<typeof router.spec>['template'];
    for (const c of template.spec?.containers ?? [])
      for (const e of c.env ?? [])
        if (e.name === 'SWITCHYARD_NATS_URL') e.value = `tls://${NATS_SERVICE_HOST}:4222`;
    const secrets = new Set([
      NATS_CREDENTIALS_SECRET,
      ...(template.spec?.volumes ?? []).flatMap((v) => (v.secret?.secretName ? [v.secret.secretName] : [])),
    ]);
    for (const name of secrets) {
      const secret = await core.readNamespacedSecret({ name, namespace: SWITCHYARD_NAMESPACE });
      await core.createNamespacedSecret({
        namespace: BEHIND,
        body: { metadata: { name }, type: secret.type, data: secret.data },
      });
    }
    await apps.createNamespacedDeployment({
      namespace: BEHIND,
      body: {
        metadata: { name: 'switchyard-router' },
        spec: {
          replicas: 0,
          selector: router.spec?.selector as { matchLabels: Record<string, string> },
          template,
        },
      },
    });
    await waitFor('the relay Pod ready', async () => {
      const pod = await core.readNamespacedPod({ name: 'nats-relay', namespace: SWITCHYARD_NAMESPACE });
      return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        ? true
        : undefined;
    });
    await expect(lookup(NATS_SERVICE_HOST), 'the address resolves only in a cluster').rejects.toThrow();
    // What the person has: a kubeconfig, and kubectl on PATH (as for any kubectl plugin).
    const env = {
      ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SWITCHYARD_NATS'))),
      PATH: `${dirname(kubectlPath())}:${process.env.PATH ?? ''}`,
    };
    const args = [MAIN, 'explain', TARGET, `--kubeconfig=${cluster.kubeConfigs.admin}`, '-n', BEHIND];
    const { stdout } = await promisify(execFile)(process.execPath, [...args, '-o', 'json'], {
      env,
      timeout: 60_000,
    });
    const [explained] = JSON.parse(stdout) as { target: string; status: { assigned?: string } }[];
    expect(explained).toMatchObject({ target: TARGET, status: { assigned: INSTANCE } });

    const urlEnv = template.spec?.containers[0]?.env?.findIndex((e) => e.name === 'SWITCHYARD_NATS_URL');
    const workersSay = (url: string) =>
      apps.patchNamespacedDeployment({
        name: 'switchyard-router',
        namespace: BEHIND,
        body: [{ op: 'replace', path: `/spec/template/spec/containers/0/env/${urlEnv}/value`, value: url }],
      });
    const explainFails = async () => {
      const failed = await promisify(execFile)(process.execPath, args, { env, timeout: 60_000 }).catch(
        (err: { code: number; stderr: string }) => err,
      );
      expect(failed).toMatchObject({ code: 1 });
      return (failed as { stderr: string }).stderr;
    };
    // The same server behind a Service its certificate does not name: refused, though the port it
    // is dialled at (127.0.0.1) is one the certificate names. The name checked is the Service's.
    await relayService('nats-unnamed');
    await workersSay(`tls://nats-unnamed.${SWITCHYARD_NAMESPACE}.svc:4222`);
    expect(await explainFails()).toMatch(
      /certificate was refused \(ERR_TLS_CERT_ALTNAME_INVALID\).*name nats-unnamed\.switchyard-system\.svc/s,
    );
    // A Service that is not there: said, with kubectl's reason and how to name the bus instead.
    await workersSay(`tls://nowhere.${SWITCHYARD_NAMESPACE}.svc:4222`);
    const stderr = await explainFails();
    expect(stderr).toMatch(
      /forwarding a port to the Service switchyard-system\/nowhere failed: .*"nowhere" not found/s,
    );
    expect(stderr).toContain('--nats.url=');
  }, 120_000);

  it('says what it could not read, and how to name the bus instead', async () => {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith('SWITCHYARD_NATS')),
    );
    const failed = await promisify(execFile)(
      process.execPath,
      [MAIN, 'explain', TARGET, `--kubeconfig=${cluster.kubeConfigs.nobody}`],
      { env, timeout: 60_000 },
    ).catch((err: { code: number; stderr: string }) => err);
    expect(failed).toMatchObject({ code: 1 });
    expect((failed as { stderr: string }).stderr).toMatch(
      /cannot find the bus from the cluster.*forbidden/is,
    );
    expect((failed as { stderr: string }).stderr).toContain('--nats.url=');
  }, 90_000);
});

describe('kubectl on a worker Pod', () => {
  const WORKER = 'deploy/switchyard-handover';

  it('reads its log: JSON lines with level names, about the targets it moved', async () => {
    const res = await runKubectl(cluster.kubeConfigs.admin, [
      '-n',
      SWITCHYARD_NAMESPACE,
      'logs',
      WORKER,
      '--tail=20',
    ]);
    expect(res.code, res.stderr).toBe(0);
    const lines = res.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { level: unknown });
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines)
      expect(['trace', 'debug', 'info', 'warn', 'error', 'fatal']).toContain(line.level);
  }, 60_000);

  it('forwards its metrics port: /metrics answers through kubectl port-forward', async () => {
    const forward = await startPortForward(cluster.kubeConfigs.admin, [
      '-n',
      SWITCHYARD_NAMESPACE,
      WORKER,
      ':8081',
    ]);
    try {
      const res = await fetch(`http://127.0.0.1:${forward.localPort}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toMatch(/^switchyard_build_info\{.*\} 1$/m);
    } finally {
      forward.stop();
    }
  }, 60_000);
});
