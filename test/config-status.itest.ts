// config-status against the real apiserver and JetStream: the watchers record configs, their
// targets and the instances, the router turns each record into work, and the handler (acting
// as the ServiceAccount of deploy/rbac/config-status.yaml) writes each config's phase and
// Validated condition: Pending without a target, Validated once its rules compile against it,
// Invalid (with the engine's diagnostic) when they stop compiling, Applied once the target's
// conversion names one of our instances; and, in the same apply, the compile's verdicts
// (schemaHash, overallLossless, spokeStatuses with ruleResults), which the apiserver's schema for
// the status accepts. Under driftPolicy FailClosed a target's schema change that breaks the
// config reads SchemaDrifted, saying its conversions are refused.
import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION, webhookServiceName } from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import { workItemSchema } from '../src/bus/messages.ts';
import { type HandlerRuntime, startHandlerRuntime } from '../src/bus/runtime/index.ts';
import { ObjectView } from '../src/bus/view.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { CONFIG_STATUS_WORK } from '../src/handlers/config-status/wakes.ts';
import {
  CONFIG_STATUS,
  CONFIG_STATUS_VIEW_KINDS,
  configStatusHandler,
} from '../src/handlers/config-status.ts';
import { createKubeClients, type KubeClients } from '../src/kube/clients.ts';
import { isNotFound } from '../src/kube/errors.ts';
import { fieldManagerFor, KubeWriter } from '../src/kube/writer.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { systemClock } from '../src/runtime/clock.ts';
import { HANDLER_VIEW_PROJECTIONS } from '../src/views/projection.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { componentIdentity } from './support/identities.ts';
import { useLocalCluster } from './support/local-cluster.ts';
import { startRecordingAndRouting } from './support/watchers.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const crds = admin.makeApiClient(ApiextensionsV1Api);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'config-status-itest' });
const PARTITIONS = 4;
const run = Date.now().toString(36);
const TARGET = `gizmos${run}.status.switchyard.dev`;
const CONFIG = `gizmos-${run}`;
const INSTANCE = `cs-${run}`;
const stoppers: Array<() => unknown> = [];
let bus: OwnBus;
let clients: KubeClients;
let runtime: HandlerRuntime;

/** v2 (stored) has spec.size where v1 has spec.replicas: the config must claim the difference. */
function target(): V1CustomResourceDefinition {
  const version = (name: string, field: string, storage: boolean) => ({
    name,
    served: true,
    storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } },
      },
    },
  });
  const [plural, ...group] = TARGET.split('.');
  return {
    metadata: { name: TARGET },
    spec: {
      group: group.join('.'),
      scope: 'Namespaced',
      names: { plural: plural ?? '', singular: 'gizmo', kind: 'Gizmo' },
      versions: [version('v2', 'size', true), version('v1', 'replicas', false)],
    },
  };
}

const rename = { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' } };
const configSpec = (rules: unknown[]) => ({
  targetCRD: { name: TARGET },
  hubVersion: 'v2',
  spokes: [{ version: 'v1', rules }],
});
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

async function status(): Promise<ConfigStatus | undefined> {
  const c = (await custom.getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'crdconversionconfigs',
    name: CONFIG,
  })) as { status?: ConfigStatus };
  return c.status;
}

const validated = (s: ConfigStatus | undefined) => s?.conditions?.find((c) => c.type === 'Validated');

async function phaseBecomes(phase: string): Promise<ConfigStatus> {
  return waitFor(`phase ${phase}`, async () => {
    const s = await status();
    return s?.phase === phase ? s : undefined;
  });
}

beforeAll(async () => {
  bus = await startOwnBus();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  stoppers.push(await startRecordingAndRouting(bus, { kubeConfig: admin, log, partitions: PARTITIONS }));
  const view = new ObjectView(CONFIG_STATUS_VIEW_KINDS, log, { project: HANDLER_VIEW_PROJECTIONS });
  await view.start(bus.js);
  stoppers.push(() => view.stop());
  clients = createKubeClients({
    kubeConfig: await componentIdentity(cluster.info, admin, CONFIG_STATUS),
    component: 'config-status-itest',
    kubernetes: defaultConfig().kubernetes,
  });
  runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: CONFIG_STATUS,
    log,
    consumers: CONFIG_STATUS_WORK.consumers(PARTITIONS),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${CONFIG_STATUS}`,
    handle: configStatusHandler({
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(CONFIG_STATUS)),
      clock: systemClock,
    }),
  });
});

afterAll(async () => {
  await runtime?.stop();
  for (const stop of stoppers.reverse()) await stop();
  await clients?.close();
  const gone = (err: unknown) => {
    if (!isNotFound(err)) throw err;
  };
  await custom
    .deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      name: CONFIG,
    })
    .catch(gone);
  await custom
    .deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      name: INSTANCE,
    })
    .catch(gone);
  await crds.deleteCustomResourceDefinition({ name: TARGET }).catch(gone);
  await bus?.stop();
});

describe('config status', () => {
  it('is Pending, Validated Unknown, while the target does not exist', async () => {
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      body: {
        apiVersion: API_VERSION,
        kind: 'CRDConversionConfig',
        metadata: { name: CONFIG },
        spec: configSpec([rename]),
      },
    });
    const s = await phaseBecomes('Pending');
    expect(validated(s)).toMatchObject({ status: 'Unknown', reason: 'TargetNotFound' });
    expect(s, 'nothing compiled, no verdicts').not.toHaveProperty('spokeStatuses');
    expect(s).not.toHaveProperty('schemaHash');
  });

  it('turns Validated once the target appears and the rules compile against it', async () => {
    await crds.createCustomResourceDefinition({ body: target() });
    const s = await phaseBecomes('Validated');
    expect(validated(s)).toMatchObject({ status: 'True', reason: 'Compiled' });
    expect(s).toMatchObject({
      overallLossless: true,
      schemaHash: expect.stringMatching(/^sha256:/),
      spokeStatuses: [
        {
          version: 'v1',
          lossless: { hubToSpoke: true, spokeToHub: true },
          ruleResults: [
            {
              index: 0,
              strategy: 'FieldRename',
              hubPaths: ['spec.size'],
              spokePaths: ['spec.replicas'],
              lossless: { hubToSpoke: true, spokeToHub: true },
            },
          ],
        },
      ],
    });
  });

  it('turns Invalid, with the engine’s diagnostic, when the rules stop claiming a difference', async () => {
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
        name: CONFIG,
        body: { spec: { spokes: [{ version: 'v1', rules: [] }] } },
      },
      mergePatch,
    );
    const s = await phaseBecomes('Invalid');
    expect(validated(s)).toMatchObject({ status: 'False', reason: 'CompileFailed' });
    expect(validated(s)?.message).toMatch(/spec\.(size|replicas)/);
    // The same compile's verdicts, in the same write: what is true of a config that does not compile.
    expect(s).toMatchObject({
      overallLossless: false,
      spokeStatuses: [
        {
          version: 'v1',
          lossless: { hubToSpoke: false, spokeToHub: false },
          fieldsUncoveredHub: ['spec.size'],
          fieldsUncoveredSpoke: ['spec.replicas'],
          errors: [expect.stringContaining('UnclaimedField'), expect.stringContaining('UnclaimedField')],
        },
      ],
    });
    expect(s?.spokeStatuses?.[0]).not.toHaveProperty('ruleResults');
  });

  it('turns Applied once the rules compile again and the target’s conversion names one of our instances', async () => {
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      body: {
        apiVersion: API_VERSION,
        kind: 'ConversionWebhookServer',
        metadata: { name: INSTANCE },
        spec: { namespace: 'default' },
      },
    });
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
        name: CONFIG,
        body: { spec: { spokes: [{ version: 'v1', rules: [rename] }] } },
      },
      mergePatch,
    );
    await phaseBecomes('Validated');
    // The handover handler's patch, played by the test: the target now names the instance.
    await crds.patchCustomResourceDefinition(
      {
        name: TARGET,
        body: {
          spec: {
            conversion: {
              strategy: 'Webhook',
              webhook: {
                conversionReviewVersions: ['v1'],
                clientConfig: {
                  service: {
                    name: webhookServiceName(INSTANCE),
                    namespace: 'default',
                    path: `/convert/${TARGET}`,
                  },
                },
              },
            },
          },
        },
      },
      mergePatch,
    );
    const s = await phaseBecomes('Applied');
    expect(validated(s)).toMatchObject({ status: 'True', reason: 'Compiled' });
  });

  it('under driftPolicy FailClosed, calls a schema change that breaks the config SchemaDrifted and says its conversions are refused', async () => {
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
        name: CONFIG,
        body: { spec: { driftPolicy: 'FailClosed' } },
      },
      mergePatch,
    );
    const applied = await waitFor('Validated at the new generation', async () => {
      const c = (await custom.getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
        name: CONFIG,
      })) as { metadata: { generation: number }; status?: ConfigStatus };
      const v = validated(c.status);
      return v?.status === 'True' && v.observedGeneration === c.metadata.generation ? c.status : undefined;
    });
    // The target's v1 field is renamed: the config's rule no longer resolves.
    const crd = await crds.readCustomResourceDefinition({ name: TARGET });
    const versions = target().spec.versions.map((v) =>
      v.name === 'v1'
        ? {
            ...v,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', properties: { count: { type: 'integer' } } } },
              },
            },
          }
        : v,
    );
    await crds.replaceCustomResourceDefinition({
      name: TARGET,
      body: { ...crd, spec: { ...crd.spec, versions } },
    });
    const s = await phaseBecomes('Invalid');
    expect(validated(s)).toMatchObject({ status: 'False', reason: 'SchemaDrifted' });
    expect(validated(s)?.message.split('\n')[0]).toMatch(
      /schema changed .*driftPolicy FailClosed: the webhook-server replicas refuse this target's conversions/,
    );
    expect(s?.schemaHash).not.toBe(applied?.schemaHash);
    expect(s?.spokeStatuses?.[0]?.ruleResults?.[0]).toMatchObject({
      index: 0,
      lossless: { hubToSpoke: false, spokeToHub: false },
      errors: [expect.stringContaining('UnknownPath spec.replicas')],
    });
  });

  it('its identity cannot write a config’s spec', async () => {
    const asHandler = (await componentIdentity(cluster.info, admin, CONFIG_STATUS)).makeApiClient(
      CustomObjectsApi,
    );
    await expect(
      asHandler.patchClusterCustomObject(
        {
          group: GROUP,
          version: VERSION,
          plural: 'crdconversionconfigs',
          name: CONFIG,
          body: { spec: { hubVersion: 'v1' } },
        },
        mergePatch,
      ),
    ).rejects.toMatchObject({ code: 403 });
  });
});
