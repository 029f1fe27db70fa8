// Crossplane core on the local stack (src/local-cluster/crossplane.ts): the real XRD controller,
// built by the bootstrap from the pinned snapshot (`ensure_crossplane`), run against the run's
// cluster. An XRD's spec.conversion reaches the apiserver only through the CRDs Crossplane
// generates from it (the composite's, named as the XRD, and the claim's), asynchronously: this
// shows that it copies the conversion into both, that a paused Crossplane (SIGSTOP) copies
// nothing until resumed, and that a killed one catches up once restarted.
//
// Crossplane holds finalizers on the XRDs it defines: the XRD is deleted while Crossplane still
// runs (the last test), and Crossplane's CRDs are removed afterwards, so that no later file finds
// Crossplane's group in discovery (test/support/crossplane-xrd-crd.ts).
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNotFound } from '../src/kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../src/kube/request.ts';
import {
  type RunningCrossplane,
  startCrossplane,
  uninstallCrossplane,
} from '../src/local-cluster/crossplane.ts';
import { isProcessAlive } from '../src/local-cluster/managed-process.ts';
import { createCertificateAuthority } from '../src/local-cluster/pki.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { XRD_GROUP, XRD_PLURAL, XRD_VERSION, xrdVersion } from './support/crossplane-xrd-crd.ts';
import { useLocalCluster } from './support/local-cluster.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const logger = pino({ level: 'warn' });
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;
const GROUP = `x${run}.crossplane.switchyard.dev`;
const XRD = `xwidgets.${GROUP}`;
const CLAIM_CRD = `widgets.${GROUP}`;
const XRD_API = { group: XRD_GROUP, version: XRD_VERSION, plural: XRD_PLURAL };
const dir = join(cluster.info.dir, `crossplane-${run}`);
/** A convergence of Crossplane's: generous, the machine has two cores shared with the control plane. */
const CONVERGE = { timeoutMs: 120_000, intervalMs: 250 };

let crossplane: RunningCrossplane | undefined;
let caBundle = '';
let xrdCreated = false;

/** The conversion the XRD asks for, pointed at `service`. */
function conversion(service: string) {
  return {
    strategy: 'Webhook',
    webhook: {
      conversionReviewVersions: ['v1'],
      clientConfig: {
        caBundle,
        service: { name: service, namespace: 'conversion-system', path: `/convert/${XRD}`, port: 443 },
      },
    },
  };
}

interface Crd {
  spec: { conversion?: unknown };
  status?: { conditions?: { type: string; status: string }[] };
}

/** A CRD as the apiserver returns it (raw JSON: no client model renames its fields), or undefined. */
async function readCrd(name: string): Promise<Crd | undefined> {
  const url = apiUrl(admin, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`);
  return sendForJson<Crd>(admin, HttpMethod.GET, url).catch((err: unknown) => {
    if (isNotFound(err)) return undefined;
    throw err;
  });
}

const established = (crd: Crd | undefined) =>
  crd?.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;

/** Waits until both generated CRDs exist, are Established and carry `expected` as spec.conversion. */
async function generatedCrdsCarry(expected: unknown, what: string): Promise<void> {
  await waitFor(
    `${XRD} and ${CLAIM_CRD} established with ${what}`,
    async () => {
      for (const name of [XRD, CLAIM_CRD]) {
        const crd = await readCrd(name);
        if (!established(crd)) return undefined;
        try {
          expect(crd?.spec.conversion).toEqual(expected);
        } catch {
          return undefined;
        }
      }
      return true;
    },
    CONVERGE,
  );
}

async function conversionsOfGeneratedCrds(): Promise<unknown[]> {
  return Promise.all([XRD, CLAIM_CRD].map(async (name) => (await readCrd(name))?.spec.conversion));
}

async function pointXrdAt(service: string): Promise<void> {
  await custom.patchClusterCustomObject(
    { ...XRD_API, name: XRD, body: { spec: { conversion: conversion(service) } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** The state letter of /proc/<pid>/stat (the field after the command name, which may hold spaces). */
async function processState(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0] ?? '';
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Deletes the XRD (Crossplane running) and waits until it and the CRDs generated from it are gone. */
async function deleteXrd(): Promise<void> {
  await custom.deleteClusterCustomObject({ ...XRD_API, name: XRD }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  await waitFor(
    `${XRD} and the CRDs generated from it deleted`,
    async () => {
      const xrd = await custom.getClusterCustomObject({ ...XRD_API, name: XRD }).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (xrd !== undefined) return undefined;
      for (const name of [XRD, CLAIM_CRD]) if ((await readCrd(name)) !== undefined) return undefined;
      return true;
    },
    CONVERGE,
  );
  xrdCreated = false;
}

beforeAll(async () => {
  await mkdir(dir, { recursive: true });
  caBundle = Buffer.from((await createCertificateAuthority(dir, 'conversion-ca')).certPem).toString('base64');
  crossplane = await startCrossplane({ kubeConfigPath: cluster.info.kubeConfigs.admin, dir, log: logger });
});

afterAll(async () => {
  // What the last test did not get to: the XRD goes while Crossplane runs (its finalizers), then
  // Crossplane, then its API.
  try {
    if (xrdCreated && crossplane) {
      if (!crossplane.running) await crossplane.restart();
      if (crossplane.paused) crossplane.resume();
      await deleteXrd();
    }
  } finally {
    await crossplane?.stop();
    await uninstallCrossplane(admin);
  }
});

describe('Crossplane core on the local stack', () => {
  it('generates the composite and the claim CRD of an XRD, with its spec.conversion', async () => {
    await custom.createClusterCustomObject({
      ...XRD_API,
      body: {
        apiVersion: `${XRD_API.group}/${XRD_API.version}`,
        kind: 'CompositeResourceDefinition',
        metadata: { name: XRD },
        spec: {
          group: GROUP,
          names: { kind: 'XWidget', plural: 'xwidgets' },
          claimNames: { kind: 'Widget', plural: 'widgets' },
          versions: [xrdVersion('v1', 'size', true), xrdVersion('v2', 'capacity', false)],
          conversion: conversion('convert-a'),
        },
      },
    });
    xrdCreated = true;
    await generatedCrdsCarry(conversion('convert-a'), 'the XRD spec.conversion');
  }, 300_000);

  it('a paused Crossplane copies nothing; resumed, it copies the change into both CRDs', async () => {
    const xp = crossplane as RunningCrossplane;
    const pid = xp.pid as number;
    xp.pause();
    expect(xp.paused).toBe(true);
    await waitFor(
      `crossplane (${pid}) stopped`,
      async () => ((await processState(pid)) === 'T' ? true : undefined),
      {
        timeoutMs: 5_000,
        intervalMs: 50,
      },
    );
    await pointXrdAt('convert-b');
    for (let i = 0; i < 5; i++) {
      await sleep(1_000);
      expect(await conversionsOfGeneratedCrds(), `${i + 1} s after the change`).toEqual([
        conversion('convert-a'),
        conversion('convert-a'),
      ]);
    }
    expect(await processState(pid), 'still stopped').toBe('T');
    xp.resume();
    expect(xp.paused).toBe(false);
    expect(await processState(pid)).not.toBe('T');
    await generatedCrdsCarry(conversion('convert-b'), 'the changed service');
  }, 300_000);

  it('a killed Crossplane, restarted, catches up with a change made while it was down', async () => {
    const xp = crossplane as RunningCrossplane;
    const pid = xp.pid as number;
    await xp.kill();
    expect(xp.running).toBe(false);
    expect(isProcessAlive(pid)).toBe(false);
    await pointXrdAt('convert-c');
    await sleep(2_000);
    expect(await conversionsOfGeneratedCrds(), 'nothing copies it while Crossplane is down').toEqual([
      conversion('convert-b'),
      conversion('convert-b'),
    ]);
    await xp.restart();
    expect(xp.running).toBe(true);
    expect(xp.pid).not.toBe(pid);
    await generatedCrdsCarry(conversion('convert-c'), 'the service changed while it was down');
  }, 300_000);

  it('deleting the XRD while Crossplane runs removes its CRDs; stop leaves no process', async () => {
    const xp = crossplane as RunningCrossplane;
    await deleteXrd();
    const pid = xp.pid as number;
    await xp.stop();
    expect(xp.running).toBe(false);
    expect(isProcessAlive(pid)).toBe(false);
  }, 300_000);
});
