// Crossplane installed, upgraded to serve XRDs at v2, its apiserver restarted, and Crossplane
// removed and installed again, all while one `switchyard watch` runs (discovery read every second):
// XRDs are recorded without a restart, at the version preferred, and no XRD stays recorded as live
// once the API is gone. On a local cluster of this file's own: the run's shared cluster has the
// XRD API installed and removed by other files, and this needs it absent when the watchers start
// (and restarts the apiserver). The XRD API is Crossplane's own CRD, from the snapshot the bootstrap
// builds Crossplane from (`ensure_crossplane`): first trimmed to v1, as Crossplane 1 serves it, then
// as it is, v1 and v2, as Crossplane 2 serves it. The watchers run on the identity
// deploy/rbac/watchers.yaml grants.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { applyBusTopology } from '../../test/support/bus.ts';
import { committedCrds, ensureCrd } from '../../test/support/crds.ts';
import {
  installCrossplaneXrdApi,
  removeCrossplaneXrdApi,
  XRD_CRD_NAME,
  XRD_GROUP,
  XRD_PLURAL,
} from '../../test/support/crossplane-xrd-crd.ts';
import { componentIdentityFile } from '../../test/support/identities.ts';
import { connectNats } from '../../test/support/nats.ts';
import { type ManagedProcess, switchyardProcess } from '../../test/support/processes.ts';
import { decodeObjectEvent, type ObjectEvent } from '../bus/messages.ts';
import { NOTHING_STORED, RecordWriter } from '../bus/records/record-writer.ts';
import { objectSubject } from '../bus/subjects.ts';
import { DEFAULT_TOPOLOGY, STREAMS, tombstoneTtl } from '../bus/topology.ts';
import { apiUrl, HttpMethod, sendForJson } from '../kube/request.ts';
import { type LocalCluster, startLocalCluster } from '../local-cluster/cluster.ts';
import { crossplaneCrdDir, XRD_CRD_FILE } from '../local-cluster/crossplane.ts';
import { freePort } from '../local-cluster/free-port.ts';
import { hostPortVariable } from '../local-cluster/node-agent/pod-env.ts';
import { WaitHopeless, waitFor } from '../local-cluster/wait.ts';
import { HEALTH_PORT } from '../runtime/health-server.ts';
import { servedResources } from './list-objects.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'xrd-discovery-itest' });
/** The discovery period the watchers run with: every bound below is a few of them. */
const DISCOVERY_SECONDS = 1;
/** How long a step discovery asks for may take: a period, a list of the bus and of the apiserver. */
const NOTICED_WITHIN_MS = 10_000;
const XRD = 'xwidgets.discovery.example.org';
/** Recorded by an earlier watcher, its deletion never recorded: nothing in the cluster has it. */
const LEFT_FROM_BEFORE = 'xleftovers.discovery.example.org';
const MISSED_DELETION = 'xmissed.discovery.example.org';

let cluster: LocalCluster;
let admin: KubeConfig;
let nc: NatsConnection;
let watchers: ManagedProcess;
let readyzUrl: string;
let failed = false;

interface LogLine {
  level: string;
  msg: string;
  xrdApi?: string;
  replacing?: string;
  stopped?: string;
  recordedDeleted?: number;
}

async function logLines(): Promise<LogLine[]> {
  const text = await readFile(watchers.logFile, 'utf8');
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine);
}

/** The first line of the watchers' log that `match` picks, waited for; hopeless once they exited. */
function awaitLogLine(what: string, match: (l: LogLine) => boolean) {
  return waitFor(
    what,
    async () => {
      if (!watchers.running) throw new WaitHopeless('the watchers exited');
      return (await logLines()).find(match);
    },
    { timeoutMs: NOTICED_WITHIN_MS, intervalMs: 100 },
  );
}

const stepLabel = (e: ObjectEvent) => (e.object.metadata.labels as Record<string, string> | undefined)?.step;
const subjectOf = (name: string) => objectSubject({ kind: 'xrd', namespace: '', name });

async function lastRecord(name: string): Promise<ObjectEvent | undefined> {
  const jsm = await jetstreamManager(nc);
  const m = await jsm.streams.getMessage(STREAMS.records, { last_by_subj: subjectOf(name) });
  if (!m) return undefined;
  const decoded = decodeObjectEvent(m.data);
  if (!decoded.ok) throw new Error(`undecodable record on ${subjectOf(name)}`);
  return decoded.value;
}

async function storedCount(name: string): Promise<number> {
  const subject = subjectOf(name);
  const info = await (await jetstreamManager(nc)).streams.info(STREAMS.records, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

function awaitRecord(name: string, what: string, match: (e: ObjectEvent) => boolean): Promise<ObjectEvent> {
  return waitFor(
    `${what} on ${subjectOf(name)}`,
    async () => {
      const last = await lastRecord(name);
      return last && match(last) ? last : undefined;
    },
    { timeoutMs: NOTICED_WITHIN_MS, intervalMs: 100 },
  );
}

/** An XRD recorded on the bus as an earlier watcher would have, with no object behind it in the cluster. */
async function recordStale(name: string, uid: string): Promise<void> {
  const writer = new RecordWriter({
    js: jetstream(nc),
    jsm: await jetstreamManager(nc),
    maxPayload: nc.info?.max_payload ?? 1024 * 1024,
    tombstoneTtl: tombstoneTtl(DEFAULT_TOPOLOGY),
  });
  const object = {
    apiVersion: `${XRD_GROUP}/v1`,
    kind: 'CompositeResourceDefinition',
    metadata: { name, uid, resourceVersion: '1' },
  };
  const event: ObjectEvent = {
    op: 'upsert',
    object,
    observedBy: 'list',
    observedAt: new Date().toISOString(),
  };
  expect((await writer.write(subjectOf(name), event, NOTHING_STORED)).outcome).toBe('stored');
}

const xrds = () => admin.makeApiClient(CustomObjectsApi);

async function createXrd(): Promise<string> {
  const created = (await xrds().createClusterCustomObject({
    group: XRD_GROUP,
    version: 'v1',
    plural: XRD_PLURAL,
    body: {
      apiVersion: `${XRD_GROUP}/v1`,
      kind: 'CompositeResourceDefinition',
      metadata: { name: XRD },
      spec: {
        group: 'discovery.example.org',
        names: { kind: 'XWidget', plural: 'xwidgets' },
        versions: [{ name: 'v1', served: true, referenceable: true }],
      },
    },
  })) as { metadata: { uid: string } };
  return created.metadata.uid;
}

async function labelXrd(value: string): Promise<void> {
  await xrds().patchClusterCustomObject(
    {
      group: XRD_GROUP,
      version: 'v1',
      plural: XRD_PLURAL,
      name: XRD,
      body: { metadata: { labels: { step: value } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** Crossplane's XRD CRD serving v1 alone, as Crossplane 1 installs it (its v2 left out). */
async function installXrdApiV1Only(): Promise<void> {
  const crd = parse(await readFile(join(crossplaneCrdDir(), XRD_CRD_FILE), 'utf8')) as {
    spec: { versions: { name: string }[] };
  };
  crd.spec.versions = crd.spec.versions.filter((v) => v.name === 'v1');
  const url = apiUrl(admin, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${XRD_CRD_NAME}`);
  url.searchParams.set('fieldManager', 'xrd-discovery-itest');
  await sendForJson(admin, HttpMethod.PATCH, url, { body: crd, contentType: 'application/apply-patch+yaml' });
  await waitFor(
    'discovery serves XRDs at v1',
    async () => ((await servedResources(admin, `${XRD_GROUP}/v1`)).includes(XRD_PLURAL) ? true : undefined),
    { timeoutMs: 30_000 },
  );
}

const apiLine = (version: string) => (l: LogLine) => l.xrdApi === `${XRD_GROUP}/${version}`;
const goneLine = (l: LogLine) => l.xrdApi === 'absent';

beforeAll(async () => {
  // The node agent's warnings while the apiserver restarts are expected: only errors are news.
  cluster = await startLocalCluster({ log: log.child({}, { level: process.env.LOG_LEVEL ?? 'error' }) });
  admin = cluster.kubeConfigFor('admin');
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await applyBusTopology(cluster);
  nc = await connectNats(cluster);
  await recordStale(LEFT_FROM_BEFORE, 'uid-left-from-before');
  const kubeconfig = await componentIdentityFile(
    cluster,
    admin,
    'watchers',
    join(cluster.dir, 'watchers.kubeconfig'),
    [],
  );
  const port = await freePort();
  readyzUrl = `http://127.0.0.1:${port}/readyz`;
  watchers = switchyardProcess({
    name: 'watchers',
    args: ['watch', `--watchers.discoverySeconds=${DISCOVERY_SECONDS}`],
    natsUrl: cluster.natsUrl,
    natsCaFile: cluster.natsCaFile,
    natsCredentialsDir: cluster.natsCredentialsDir,
    kubeconfig,
    logFile: join(cluster.dir, 'logs', 'watchers.log'),
    log,
    env: { [hostPortVariable(HEALTH_PORT)]: String(port) },
  });
}, 180_000);

afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') failed = true;
});

afterAll(async () => {
  await watchers?.stop();
  await nc?.close();
  await cluster?.stop({ keepDir: failed });
  if (failed) process.stderr.write(`[xrd-discovery] a test failed: logs kept in ${cluster.dir}/logs\n`);
});

describe('the watchers follow Crossplane’s XRD API while they run', () => {
  it('are ready without Crossplane, and record as deleted an XRD the bus held from before', async () => {
    await waitFor(
      'the watchers ready',
      async () => ((await fetch(readyzUrl).catch(() => undefined))?.ok ? true : undefined),
      {
        timeoutMs: 30_000,
      },
    );
    const tombstone = await awaitRecord(LEFT_FROM_BEFORE, 'a deletion', (e) => e.op === 'delete');
    expect(tombstone.observedBy, 'a handler reading the bus would see an XRD that no longer exists').toBe(
      'relist-gap',
    );
    expect((await awaitLogLine('the XRD API found absent', goneLine)).recordedDeleted).toBe(1);
  });

  it('record an XRD within a few discovery periods of Crossplane being installed, at v1 where only v1 is served', async () => {
    await installXrdApiV1Only();
    const uid = await createXrd();
    const record = await awaitRecord(XRD, 'the new XRD', (e) => e.op === 'upsert');
    expect(record.object.metadata.uid).toBe(uid);
    expect(record.object.apiVersion).toBe(`${XRD_GROUP}/v1`);
    expect((await awaitLogLine('the XRD API served', apiLine('v1'))).level).toBe('info');
  });

  it('move to v2 when an upgrade serves it, and record nothing again for the move', async () => {
    const before = await storedCount(XRD);
    await installCrossplaneXrdApi(admin);
    await waitFor(
      'discovery serves XRDs at v2',
      async () => ((await servedResources(admin, `${XRD_GROUP}/v2`)).includes(XRD_PLURAL) ? true : undefined),
      { timeoutMs: 30_000 },
    );
    expect((await awaitLogLine('the XRD API at v2', apiLine('v2'))).replacing).toBe('v1');
    expect(await storedCount(XRD), 'the same object at another version is not a change').toBe(before);
    await labelXrd('after-upgrade');
    const record = await awaitRecord(XRD, 'the labelled XRD', (e) => stepLabel(e) === 'after-upgrade');
    expect(record.object.apiVersion).toBe(`${XRD_GROUP}/v2`);
  });

  it('keep recording through an apiserver restart: a failed discovery read stops nothing', async () => {
    await cluster.restartApiServer({ downMs: 3 * DISCOVERY_SECONDS * 1000 });
    await awaitLogLine('a failed discovery read', (l) => l.msg.startsWith('could not read discovery'));
    await labelXrd('after-restart');
    const record = await awaitRecord(XRD, 'the relabelled XRD', (e) => stepLabel(e) === 'after-restart');
    expect(record.object.apiVersion).toBe(`${XRD_GROUP}/v2`);
    const lines = await logLines();
    expect(lines.filter(goneLine), 'the XRD API was never gone: only the start found it absent').toHaveLength(
      1,
    );
    expect(lines.filter(apiLine('v2')), 'the v2 watcher ran on, neither stopped nor replaced').toHaveLength(
      1,
    );
  });

  it('stop recording once Crossplane is removed, and leave no XRD recorded as live', async () => {
    await recordStale(MISSED_DELETION, 'uid-missed-deletion');
    await removeCrossplaneXrdApi(admin);
    const gone = await awaitLogLine('the XRD API gone', (l) => goneLine(l) && l.stopped === 'v2');
    // The XRD itself was deleted with its CRD, and the watch most likely recorded that already.
    expect(gone.recordedDeleted, 'the XRD whose deletion no watch saw').toBeGreaterThanOrEqual(1);
    for (const name of [XRD, MISSED_DELETION])
      expect((await lastRecord(name))?.op, `${name}: the API is gone, and its objects with it`).toBe(
        'delete',
      );
    expect((await fetch(readyzUrl)).ok, 'readiness does not depend on Crossplane').toBe(true);
  });

  it('record XRDs again when Crossplane comes back, at v2 from the start', async () => {
    await installCrossplaneXrdApi(admin);
    const uid = await createXrd();
    const record = await awaitRecord(XRD, 'the XRD created again', (e) => e.op === 'upsert');
    expect(record.object.metadata.uid).toBe(uid);
    expect(record.object.apiVersion).toBe(`${XRD_GROUP}/v2`);
    const atV2 = (await logLines()).filter(apiLine('v2'));
    expect(atV2.map((l) => l.replacing)).toEqual(['v1', undefined]);
  });
});
