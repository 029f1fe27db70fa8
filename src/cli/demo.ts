// `switchyard demo` (scripts/demo.sh): Switchyard on a local cluster, a pool of instances
// serving a few dozen targets under live load, and a new instance joining the pool: the targets
// it wins move to it, each through a verified handover, while every read and write of every
// target goes through a conversion and is checked. The output alone tells a newcomer what
// happened; the commands it prints let them look for themselves while it runs.
//
//   switchyard demo [--keep-running] [--targets=N] [--nats-cluster] [--crossplane]
//
// --nats-cluster runs the bus as a 3-node JetStream cluster with every stream replicated three
// times (deploy/nats-cluster's setting), instead of one nats-server.
// --crossplane starts a real Crossplane core after Switchyard (built by scripts/demo.sh on first
// use) and makes every target a Crossplane XRD with an XRDConversionConfig: a move is verified
// once Crossplane has copied it into the CRD it generates, which is what the apiserver routes by.
// By default it finishes, tears everything down and exits 0 (1 if any request failed or any
// value was wrong). --keep-running keeps the cluster and the load up until Ctrl-C. Ctrl-C at
// any point stops the load and removes the cluster.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ConfigStatus } from '../api/conversion-config.ts';
import { poolMember, rendezvousWinner } from '../core/assignment.ts';
import { HttpMethod } from '../kube/request.ts';
import { kubectlPath, type LocalCluster, PROJECT_ROOT, startLocalCluster } from '../local-cluster/cluster.ts';
import { type RunningCrossplane, startCrossplane } from '../local-cluster/crossplane.ts';
import { installSwitchyard, SWITCHYARD_NAMESPACE } from '../local-cluster/install.ts';
import { natsFlags } from '../local-cluster/nats-client.ts';
import { systemClock } from '../runtime/clock.ts';
import { createLogger } from '../runtime/logger.ts';
import { apiserverConversions, totalOf } from '../scenario/apiserver-conversions.ts';
import { ConversionLoad, type LoadSummary } from '../scenario/conversion-load.ts';
import {
  type ConfigKind,
  configStatuses,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  createTwoVersionXrd,
  handoverReady,
  isServedBy,
  readyReplicasOf,
  request,
  SERVED_FIELD,
  servingInstances,
} from '../scenario/fleet.ts';
import {
  convertShowcaseObject,
  createShowcase,
  SHOWCASE_PLURAL,
  SHOWCASE_RULES,
} from '../scenario/showcase.ts';

const GROUP = 'demo.switchyard.dev';
const NAMESPACE = 'demo';
const SHOWCASE_TARGET = `${SHOWCASE_PLURAL}.${GROUP}`;
const POOL = ['alpha', 'bravo', 'charlie'] as const;
const NEWCOMER = 'delta';
const INSTANCES = [...POOL, NEWCOMER];
// biome-ignore format: a table of names
const NOUNS = [
  'widgets', 'gadgets', 'gizmos', 'sprockets', 'cogs', 'valves', 'pumps', 'gears',
  'levers', 'pulleys', 'rivets', 'bolts', 'nuts', 'springs', 'hinges', 'pistons',
  'rotors', 'axles', 'cranks', 'dials', 'knobs', 'relays', 'fuses', 'sensors',
];
const MOVE_TIMEOUT_MS = 120_000;
/** Load after the last move: the sources drain, the apiserver rebuilds the moved resources' storage. */
const SETTLE_MS = 5_000;

class Interrupted extends Error {}

interface Target {
  crd: string;
  config: string;
  kind: string;
  plural: string;
}

export async function runDemo(args: string[]): Promise<void> {
  // The npm package carries the operator commands, not the local stack the demo builds and runs.
  if (!existsSync(join(PROJECT_ROOT, 'scripts', 'demo.sh'))) {
    process.stderr.write(
      'switchyard demo runs from a checkout of Switchyard: clone it and run scripts/demo.sh, which builds ' +
        'the local stack first. This installation has the operator commands (switchyard --help).\n',
    );
    process.exitCode = 2;
    return;
  }
  const keepRunning = args.includes('--keep-running');
  const count = Number(args.find((a) => a.startsWith('--targets='))?.split('=')[1] ?? 24);
  if (!Number.isInteger(count) || count < 1 || count > NOUNS.length * 10)
    throw new Error(`--targets must be an integer from 1 to ${NOUNS.length * 10}`);
  const demo = new Demo(
    targetsOf(count),
    keepRunning,
    args.includes('--nats-cluster'),
    args.includes('--crossplane'),
  );
  process.exitCode = await demo.run();
}

function targetsOf(count: number): Target[] {
  return Array.from({ length: count }, (_, i) => {
    const noun = NOUNS[i % NOUNS.length] as string;
    const plural = i < NOUNS.length ? noun : `${noun.slice(0, -1)}${Math.floor(i / NOUNS.length)}s`;
    const singular = plural.slice(0, -1);
    return {
      crd: `${plural}.${GROUP}`,
      config: plural,
      plural,
      kind: `${singular[0]?.toUpperCase()}${singular.slice(1)}`,
    };
  });
}

class Demo {
  private readonly targets: Target[];
  private readonly keepRunning: boolean;
  private readonly natsCluster: boolean;
  /** Targets are Crossplane XRDs, and Crossplane runs. */
  private readonly xrds: boolean;
  private crossplane: RunningCrossplane | undefined;
  private readonly log = createLogger({ level: process.env.LOG_LEVEL ?? 'warn', format: 'auto' }, 'demo');
  private readonly interrupted: Promise<never>;
  private cluster: LocalCluster | undefined;
  private loads: ConversionLoad[] = [];
  private readonly startedAt = performance.now();
  private step = 0;

  constructor(targets: Target[], keepRunning: boolean, natsCluster: boolean, xrds: boolean) {
    this.targets = targets;
    this.keepRunning = keepRunning;
    this.natsCluster = natsCluster;
    this.xrds = xrds;
    this.interrupted = new Promise<never>((_, reject) => {
      const stop = () => reject(new Interrupted());
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    this.interrupted.catch(() => {});
  }

  async run(): Promise<number> {
    try {
      return await Promise.race([this.scenario(), this.interrupted]);
    } catch (err) {
      if (!(err instanceof Interrupted)) throw err;
      say('\nInterrupted: stopping the load and the cluster.');
      return 130;
    } finally {
      await this.tearDown();
    }
  }

  private async scenario(): Promise<number> {
    const admin = await this.startCluster();
    await this.install(admin);
    if (this.xrds) await this.startCrossplane();
    await this.createPool(admin);
    await this.createTargets(admin);
    const before = await this.whereServed(admin);
    await this.startLoad(admin);
    await this.showcase(admin);
    this.printTryThis();
    const moved = await this.addNewcomer(admin, before);
    const summary = await this.finish(admin, moved);
    if (this.keepRunning) {
      say(
        '\nStill running (--keep-running): the load goes on; explore with the commands above. Ctrl-C stops it.',
      );
      await this.interrupted;
    }
    return summary.failures.length + summary.wrongValues.length === 0 ? 0 : 1;
  }

  private async startCluster(): Promise<KubeConfig> {
    const bus = this.natsCluster ? 'a 3-node NATS JetStream cluster' : 'NATS JetStream';
    this.heading(
      `Starting a local Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager), ${bus} and a node agent that runs Pods as processes`,
    );
    const t = performance.now();
    this.cluster = await startLocalCluster({ log: this.log, natsCluster: this.natsCluster });
    done(t, `state and logs in ${this.cluster.dir}`);
    return this.cluster.kubeConfigFor('admin');
  }

  private async install(admin: KubeConfig): Promise<void> {
    const cluster = this.requireCluster();
    const replicated = this.natsCluster ? ', every stream kept on all 3 nodes (bus.streamReplicas=3)' : '';
    this.heading(
      `Installing Switchyard as a user would: deploy/external-nats rendered by kustomize, pointed at the local NATS (TLS, its CA in the Secret switchyard-nats-ca) with a NATS user per component${replicated}: namespace, CRDs, RBAC, API priority, the credentials and bus-setup Jobs, 7 workers × 2 replicas, the admission webhook`,
    );
    const t = performance.now();
    const { deployments } = await installSwitchyard({
      admin,
      natsUrl: cluster.natsUrl,
      natsCaFile: cluster.natsCaFile,
      natsCredentialsDir: cluster.natsCredentialsDir,
      ...(this.natsCluster ? { streamReplicas: 3 as const } : {}),
      log: this.log,
    });
    done(t, `${deployments.length} Deployments ready in ${SWITCHYARD_NAMESPACE}`);
  }

  private async startCrossplane(): Promise<void> {
    const cluster = this.requireCluster();
    this.heading(
      "Starting Crossplane core (built from source) after Switchyard: its XRD controller generates a CRD from each XRD and copies the XRD's spec.conversion into it; the apiserver routes by that CRD. Switchyard's watchers find the XRD API without a restart",
    );
    const t = performance.now();
    this.crossplane = await startCrossplane({
      kubeConfigPath: cluster.kubeConfigs.admin,
      dir: join(cluster.dir, 'crossplane'),
      log: this.log,
    });
    done(t, `its log in ${this.crossplane.logFile}`);
  }

  private get configKind(): ConfigKind {
    return this.xrds ? 'XRDConversionConfig' : 'CRDConversionConfig';
  }

  private async createPool(admin: KubeConfig): Promise<void> {
    this.heading(
      `Creating the instances ${POOL.join(', ')} (${POOL[0]} is the default), each in the sharding pool with weight 1 and 2 webhook-server replicas`,
    );
    const t = performance.now();
    for (const [i, name] of POOL.entries())
      await createInstance(admin, name, {
        default: i === 0,
        replicas: 2,
        sharding: { enabled: true, weight: 1 },
      });
    done(t, 'the instances handler renders each into a Deployment, a Service, certificates and a Lease Role');
  }

  private async createTargets(admin: KubeConfig): Promise<void> {
    this.heading(
      this.xrds
        ? `Creating ${this.targets.length} targets: Crossplane XRDs (apiextensions.crossplane.io/v2, namespaced composites) storing spec.size at v1 and serving it as spec.${SERVED_FIELD} at v2, each with an XRDConversionConfig (one FieldRename rule); each is served once Crossplane has copied its conversion into the CRD it generates`
        : `Creating ${this.targets.length} targets: CRDs storing spec.size at v1 and serving it as spec.${SERVED_FIELD} at v2, each with a CRDConversionConfig (one FieldRename rule)`,
    );
    const t = performance.now();
    await request(admin, HttpMethod.POST, '/api/v1/namespaces', { metadata: { name: NAMESPACE } });
    for (const target of this.targets) {
      if (this.xrds) await createTwoVersionXrd(admin, target.crd, target.kind);
      else await createTwoVersionTarget(admin, target.crd, target.kind);
      await createRenameConfig(admin, target.config, target.crd, undefined, this.configKind);
    }
    await this.waitUntilServed(admin, (served) => `  served so far: ${served}/${this.targets.length}`);
    done(
      t,
      'every target is served by the instance the resolver picked, its conversion pointed at that Service',
    );
  }

  private async whereServed(admin: KubeConfig): Promise<Map<string, string | undefined>> {
    const serving = await servingInstances(admin, INSTANCES);
    const byInstance = new Map<string, string[]>();
    for (const t of this.targets) {
      const instance = serving.get(t.crd) ?? '(none)';
      byInstance.set(instance, [...(byInstance.get(instance) ?? []), t.plural]);
    }
    say('\nWhere each target is served (weighted rendezvous hashing on the target name):');
    for (const [instance, names] of [...byInstance].sort())
      say(`  ${instance.padEnd(8)} ${String(names.length).padStart(3)}  ${names.join(' ')}`);
    return new Map(this.targets.map((t) => [t.crd, serving.get(t.crd)]));
  }

  private async startLoad(admin: KubeConfig): Promise<void> {
    this.heading(
      `Starting load: for every target, a client creates, patches, gets and lists 2 objects at v2 (not the storage version: each request goes through the conversion webhook) and a watch follows them; every value returned is checked against what was written`,
    );
    this.loads = this.targets.map(
      (t) =>
        new ConversionLoad(
          {
            kc: admin,
            group: GROUP,
            version: 'v2',
            plural: t.plural,
            kind: t.kind,
            namespace: NAMESPACE,
            field: SERVED_FIELD,
          },
          { run: 'demo', workers: 1, objectsPerWorker: 2, pauseMs: 250 },
        ),
    );
    await Promise.all(this.loads.map((l) => l.start()));
    await systemClock.sleep(3_000);
    say(`  ${this.loadLine()}`);
  }

  private async showcase(admin: KubeConfig): Promise<void> {
    const strategies = [...new Set(SHOWCASE_RULES.map((r) => r.strategy))].join(', ');
    this.heading(
      `Converting a target whose versions differ in six ways, each a strategy of the reference operator (${strategies}): an object is written at v2 and stored at v1, converted by the instance that serves it`,
    );
    const t = performance.now();
    await createShowcase(admin, SHOWCASE_TARGET, SHOWCASE_PLURAL);
    const { written, stored } = await convertShowcaseObject(admin, SHOWCASE_TARGET, NAMESPACE);
    say(`  written at v2: ${JSON.stringify(written)}`);
    say(`  stored at v1:  ${JSON.stringify(stored)}`);
    done(t, `kubectl get ${SHOWCASE_TARGET.split('.')[0]} -o yaml reads it at either version`);
  }

  private printTryThis(): void {
    const cluster = this.requireCluster();
    const example = this.targets[0];
    say('\nTry these in another terminal while it runs:');
    say(`  export KUBECONFIG=${cluster.kubeConfigs.admin}`);
    say(`  alias kubectl=${kubectlPath()}`);
    say('  kubectl get conversionwebhookservers');
    say(
      `  kubectl get ${this.xrds ? 'xrdconversionconfigs' : 'crdconversionconfigs'} -o custom-columns='CONFIG:.metadata.name,ASSIGNED:.status.assignedWebhookServer,HANDOVER:.status.conditions[?(@.type=="HandoverReady")].reason'`,
    );
    if (this.xrds && example) {
      say(
        `  kubectl get crd ${example.crd} -o jsonpath='{.spec.conversion.webhook.clientConfig.service.name}'   # what Crossplane copied: what the apiserver routes by`,
      );
      say(
        `  kill -STOP ${this.crossplane?.pid}   # pause Crossplane: moves wait (AwaitingCrossplane); kill -CONT resumes it`,
      );
    }
    if (example)
      say(
        `  kubectl get ${example.plural}.v2.${GROUP} -n ${NAMESPACE} -o yaml     # served at v2, stored at v1`,
      );
    say(`  kubectl get pods -n ${SWITCHYARD_NAMESPACE}`);
    say(
      `  kubectl logs -n ${SWITCHYARD_NAMESPACE} deploy/switchyard-handover   # a worker's log: each move it makes`,
    );
    say(
      `  kubectl port-forward -n ${SWITCHYARD_NAMESPACE} deploy/switchyard-handover :8081   # then curl its /metrics`,
    );
    say(
      `  kubectl get leases -n ${SWITCHYARD_NAMESPACE} -l app.kubernetes.io/managed-by=switchyard   # each replica's served set`,
    );
    say(`  node src/cli/main.ts bus stats ${natsFlags(cluster).join(' ')}   # streams, consumers, backlog`);
    say(`  curl -s '${cluster.natsMonitorUrl}/jsz?streams=true'`);
  }

  /** Adds the newcomer to the pool and follows the moves it causes until each is verified. */
  private async addNewcomer(admin: KubeConfig, before: Map<string, string | undefined>): Promise<Moved[]> {
    const pool = INSTANCES.map((name) => poolMember(name, 1));
    const expected = this.targets.filter((t) => rendezvousWinner(pool, t.crd)?.name === NEWCOMER);
    this.heading(
      `Adding the instance ${NEWCOMER} to the pool. The resolver gives it only the targets it now wins (${expected.length} of ${this.targets.length}); nothing else moves. Each move waits until both of ${NEWCOMER}'s replicas report the target servable in their Leases, then repoints ${this.xrds ? 'the XRD, and is verified once Crossplane has copied that into the generated CRD' : 'the CRD'}; the old instance keeps serving meanwhile`,
    );
    const t = performance.now();
    await createInstance(admin, NEWCOMER, { replicas: 2, sharding: { enabled: true, weight: 1 } });
    const moved: Moved[] = [];
    const pending = new Set(expected.map((e) => e.config));
    let lastLine = '';
    const deadline = Date.now() + MOVE_TIMEOUT_MS;
    while (pending.size > 0) {
      if (Date.now() > deadline)
        throw new Error(`moves not done within ${MOVE_TIMEOUT_MS / 1000} s: ${[...pending].join(', ')}`);
      const [statuses, serving, newcomerReady] = await Promise.all([
        configStatuses(admin, this.configKind),
        servingInstances(admin, INSTANCES),
        readyReplicasOf(admin, NEWCOMER),
      ]);
      for (const target of expected) {
        const status = statuses.get(target.config);
        if (!pending.has(target.config) || !isServedBy(status, serving.get(target.crd), NEWCOMER)) continue;
        pending.delete(target.config);
        const entry = {
          target,
          from: before.get(target.crd),
          reason: handoverReady(status)?.reason ?? '',
          ms: performance.now() - t,
        };
        moved.push(entry);
        say(
          `  ✓ ${target.plural.padEnd(10)} ${entry.from} → ${NEWCOMER}   HandoverReady=True (${entry.reason}) after ${(entry.ms / 1000).toFixed(1)} s`,
        );
      }
      const waiting = [...pending].map((c) => `${c} (${moveState(statuses.get(c), newcomerReady)})`);
      const line = `  moves ${moved.length}/${expected.length} done${waiting.length ? ` · waiting: ${waiting.slice(0, 4).join(', ')}${waiting.length > 4 ? ', …' : ''}` : ''} · ${this.loadLine()}`;
      if (line !== lastLine && pending.size > 0) say(line);
      lastLine = line;
      if (pending.size > 0) await systemClock.sleep(1_000);
    }
    const unexpected = await servingInstances(admin, INSTANCES);
    const strays = this.targets.filter(
      (t) => !expected.includes(t) && unexpected.get(t.crd) !== before.get(t.crd),
    );
    if (strays.length > 0)
      throw new Error(
        `targets moved that ${NEWCOMER} does not win: ${strays.map((s) => s.plural).join(', ')}`,
      );
    done(
      t,
      `${moved.length} targets moved to ${NEWCOMER}; the other ${this.targets.length - moved.length} stayed where they were`,
    );
    return moved;
  }

  private async finish(admin: KubeConfig, moved: Moved[]): Promise<LoadSummary> {
    await systemClock.sleep(SETTLE_MS);
    const summaries = await Promise.all(this.loads.map((l) => l.stop()));
    this.loads = [];
    const summary = combined(summaries);
    const conversions = totalOf(
      await apiserverConversions(admin),
      this.targets.map((t) => t.crd),
    );
    const verified = moved.filter((m) => m.reason === 'HandoverReady').length;
    const slowest = Math.max(0, ...moved.map((m) => m.ms));
    say('\nSummary');
    say(
      `  moves            ${moved.length} targets to ${NEWCOMER}, ${verified} verified against its replicas' reports (HandoverReady), the last ${(slowest / 1000).toFixed(1)} s after it joined`,
    );
    say(
      `  requests at v2   ${summary.requests.toLocaleString('en')} (${Object.entries(summary.byOp)
        .map(([op, n]) => `${op} ${n}`)
        .join(', ')})`,
    );
    say(`  failed           ${summary.failures.length}`);
    say(`  wrong values     ${summary.wrongValues.length}`);
    say(
      `  apiserver        ${conversions.succeeded.toLocaleString('en')} conversion webhook calls, ${conversions.failed} failed (its own metric)`,
    );
    say(
      `  absorbed         ${summary.throttledRetries} 429s retried, ${summary.watchResumes} watches resumed, ${summary.relists} relists (a repoint rebuilds the resource's storage; clients retry as client-go does)`,
    );
    for (const f of summary.failures.slice(0, 5))
      say(`  failure: ${f.op} ${f.object ?? ''} ${f.status ?? ''} ${f.message}`);
    for (const w of summary.wrongValues.slice(0, 5))
      say(
        `  wrong value: ${w.op} ${w.target}/${w.object} at ${(w.atMs / 1000).toFixed(1)} s: got ${JSON.stringify(w.got)}, possible ${JSON.stringify(w.expected)}`,
      );
    say(`  total time       ${((performance.now() - this.startedAt) / 1000).toFixed(0)} s`);
    return summary;
  }

  private async waitUntilServed(admin: KubeConfig, progress: (served: number) => string): Promise<void> {
    const deadline = Date.now() + MOVE_TIMEOUT_MS;
    let last = -1;
    for (;;) {
      const [statuses, serving] = await Promise.all([
        configStatuses(admin, this.configKind),
        servingInstances(admin, INSTANCES),
      ]);
      const served = this.targets.filter((t) => {
        const status = statuses.get(t.config);
        return isServedBy(status, serving.get(t.crd), status?.assignedWebhookServer);
      }).length;
      if (served === this.targets.length) return;
      if (served !== last) say(progress(served));
      last = served;
      if (Date.now() > deadline)
        throw new Error(
          `only ${served}/${this.targets.length} targets served after ${MOVE_TIMEOUT_MS / 1000} s`,
        );
      await systemClock.sleep(1_000);
    }
  }

  private loadLine(): string {
    const p = this.loads
      .map((l) => l.progress())
      .reduce(
        (a, b) => ({
          requests: a.requests + b.requests,
          failures: a.failures + b.failures,
          wrongValues: a.wrongValues + b.wrongValues,
        }),
        { requests: 0, failures: 0, wrongValues: 0 },
      );
    return `requests so far ${p.requests.toLocaleString('en')}, failed ${p.failures}, wrong values ${p.wrongValues}`;
  }

  private heading(text: string): void {
    this.step++;
    say(`\n[${this.step}] ${text}`);
  }

  private requireCluster(): LocalCluster {
    if (!this.cluster) throw new Error('the cluster is not started');
    return this.cluster;
  }

  private async tearDown(): Promise<void> {
    await Promise.all(this.loads.map((l) => l.stop(0).catch(() => undefined)));
    await this.crossplane?.stop();
    if (!this.cluster) return;
    const t = performance.now();
    say('\nStopping the cluster and removing its files …');
    await this.cluster.stop();
    done(t, 'nothing is left running');
  }
}

interface Moved {
  target: Target;
  from: string | undefined;
  reason: string;
  ms: number;
}

/** Where a move to the newcomer stands: its HandoverReady reason once the handover is about it. */
function moveState(status: ConfigStatus | undefined, newcomerReady: number): string {
  if (status?.assignedWebhookServer !== NEWCOMER)
    return newcomerReady === 0 ? `held until ${NEWCOMER} has a ready replica` : 'not assigned yet';
  if (status.handoverDestination !== NEWCOMER) return 'assigned';
  return handoverReady(status)?.reason ?? 'assigned';
}

function combined(summaries: LoadSummary[]): LoadSummary {
  const byOp = { create: 0, patch: 0, get: 0, list: 0, watch: 0 };
  for (const s of summaries)
    for (const op of Object.keys(byOp) as (keyof typeof byOp)[]) byOp[op] += s.byOp[op];
  return {
    requests: summaries.reduce((n, s) => n + s.requests, 0),
    byOp,
    failures: summaries.flatMap((s) => s.failures),
    wrongValues: summaries.flatMap((s) => s.wrongValues),
    throttledRetries: summaries.reduce((n, s) => n + s.throttledRetries, 0),
    watchEvents: summaries.reduce((n, s) => n + s.watchEvents, 0),
    watchResumes: summaries.reduce((n, s) => n + s.watchResumes, 0),
    relists: summaries.reduce((n, s) => n + s.relists, 0),
    durationMs: Math.max(0, ...summaries.map((s) => s.durationMs)),
  };
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

function done(startedAt: number, what: string): void {
  say(`  done in ${((performance.now() - startedAt) / 1000).toFixed(1)} s: ${what}`);
}
