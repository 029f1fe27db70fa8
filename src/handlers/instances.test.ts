// The instances handler over fakes: what one wake applies, so that what reaches the apiserver can
// be checked without one (test/instances.itest.ts runs it against the real one).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, IN_USE_FINALIZER } from '../api/constants.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { HandlerContext } from '../bus/runtime/index.ts';
import type { RenderSettings } from '../core/instances/render.ts';
import type { ResourceRef } from '../kube/writer.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { AppliedRenderings } from './instances/applied-renderings.ts';
import { NatsCaFile } from './instances/nats-ca.ts';
import type { SecretRead } from './instances/secrets.ts';
import { type InstancesDeps, instancesHandler } from './instances.ts';
import { fakeView } from './test-support.ts';

const NAMESPACE = 'switchyard-system';
const SETTINGS: RenderSettings = {
  defaultNamespace: NAMESPACE,
  image: { repository: 'switchyard', tag: 'dev' },
  handoverServiceAccount: { name: 'switchyard-handover', namespace: NAMESPACE },
};
const log = pino({ level: 'silent' });
const ctx = { signal: new AbortController().signal, log, seq: 1 } as HandlerContext;

const instance = {
  apiVersion: API_VERSION,
  kind: 'ConversionWebhookServer',
  metadata: { name: 'blue', uid: 'uid-1', resourceVersion: '7', finalizers: [IN_USE_FINALIZER] },
  spec: { replicas: 2 },
} as RecordedObject;
// Recorded, so a wake whose rendering was applied lately sends nothing (applied-renderings.ts).
const deployment = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'blue-webhook-server', namespace: NAMESPACE },
} as RecordedObject;

/** The handler's deps over fakes; every apply is recorded, Secrets are kept as written. */
function harness(settings: () => RenderSettings) {
  const applies: { resource: string; object: KubernetesObject }[] = [];
  const secrets = new Map<string, SecretRead>();
  const deps: InstancesDeps = {
    view: fakeView([
      ['webhookserver', instance],
      ['deployment', deployment],
    ]),
    writer: {
      apply: async <T extends KubernetesObject>(ref: ResourceRef, object: T) => {
        applies.push({ resource: ref.resource, object });
        if (ref.resource === 'secrets') {
          const data = (object as V1Secret).data ?? {};
          secrets.set(object.metadata?.name ?? '', {
            data: Object.fromEntries(
              Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
            ),
            resourceVersion: String(applies.length),
          });
        }
        return object;
      },
      applyStatus: async <T extends KubernetesObject>(_ref: ResourceRef, object: T) => object,
      mergePatch: () => Promise.reject(new Error('no merge patch expected')),
    },
    secrets: async (_namespace, name) => secrets.get(name),
    issuer: x509Issuer(),
    clock: { now: () => Date.now(), monotonic: () => 0, sleep: () => Promise.resolve() },
    settings,
    handover: {
      js: { publish: () => Promise.reject(new Error('no handover work expected')) },
      partitions: 1,
    },
    applied: new AppliedRenderings(),
  };
  const wake = async () => {
    applies.length = 0;
    await instancesHandler(deps)({ key: 'blue', seq: 1 }, ctx);
    return [...applies];
  };
  return { wake };
}

const natsSecretOf = (applies: { resource: string; object: KubernetesObject }[]) =>
  applies.find((a) => a.object.metadata?.name === 'blue-webhook-server-nats')?.object as V1Secret | undefined;
const caOf = (secret: V1Secret | undefined) =>
  Buffer.from(secret?.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
const templateOf = (applies: { resource: string; object: KubernetesObject }[]) =>
  JSON.stringify(
    (applies.find((a) => a.resource === 'deployments')?.object as { spec?: { template?: unknown } })?.spec
      ?.template,
  );

let dir = '';
let caA = '';
let caB = '';

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'instances-handler-'));
  const validity = { notBeforeMs: Date.now() - 60_000, notAfterMs: Date.now() + 3_600_000 };
  caA = (await x509Issuer().createCa({ commonName: 'bus CA A', ...validity })).certPem;
  caB = (await x509Issuer().createCa({ commonName: 'bus CA B', ...validity })).certPem;
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the instances handler', () => {
  it('renders a changed NATS CA into the replicas’ Secret at the next wake, without a restart or a rollout', async () => {
    const file = join(dir, 'ca.crt');
    writeFileSync(file, caA);
    const ca = new NatsCaFile(file, log);
    const { wake } = harness(() => ({ ...SETTINGS, natsCaPem: ca.current() }));

    const first = await wake();
    expect(caOf(natsSecretOf(first))).toBe(caA);
    expect(await wake(), 'an unchanged rendering applied a moment ago is not sent again').toEqual([]);

    writeFileSync(file, caB);
    const afterChange = await wake();
    expect(caOf(natsSecretOf(afterChange)), 'the replicas would keep trusting the old CA').toBe(caB);
    // The replicas' NATS client reads the mounted file at each reconnect: no Pod needs replacing.
    expect(templateOf(afterChange)).toBe(templateOf(first));
  });

  it('applies the replicas’ NetworkPolicy with the other children, before the Deployment', async () => {
    const applies = await harness(() => SETTINGS).wake();
    const resources = applies.map((a) => a.resource);
    expect(resources).toContain('networkpolicies');
    expect(resources.indexOf('networkpolicies')).toBeLessThan(resources.indexOf('deployments'));
  });
});
