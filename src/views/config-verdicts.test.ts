import { describe, expect, it } from 'vitest';
import { API_VERSION } from '../api/constants.ts';
import { type ConversionConfig, conversionConfigSchema } from '../api/conversion-config.ts';
import type { RecordedObject } from '../bus/messages.ts';
import { int, root } from '../engine/test-support.ts';
import { fakeView } from '../handlers/test-support.ts';
import { ConfigVerdicts } from './config-verdicts.ts';

const TARGET = 'widgets.example.org';

/** v2 stored with spec.size, v1 served with spec.replicas: only a rename rule claims the difference. */
function crd(generation: number, v1Field = 'replicas'): RecordedObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: TARGET, uid: 'crd-uid', resourceVersion: String(generation * 10), generation },
    spec: {
      versions: [
        { name: 'v2', served: true, storage: true, schema: { openAPIV3Schema: root({ size: int() }) } },
        { name: 'v1', served: true, storage: false, schema: { openAPIV3Schema: root({ [v1Field]: int() }) } },
      ],
    },
  };
}

const config: RecordedObject = {
  apiVersion: API_VERSION,
  kind: 'CRDConversionConfig',
  metadata: { name: 'widgets', uid: 'config-uid', resourceVersion: '5', generation: 1 },
  spec: {
    targetCRD: { name: TARGET },
    hubVersion: 'v2',
    spokes: [
      {
        version: 'v1',
        rules: [
          { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' } },
        ],
      },
    ],
  },
};

/** A view as the handlers keep it (configs without rules, targets without schemas) that counts its reads of whole records. */
function countingView(target: RecordedObject) {
  const view = fakeView([
    ['crdconfig', config],
    ['crd', target],
  ]);
  const reads: string[] = [];
  return {
    reads,
    view: {
      ...view,
      whole: (key: Parameters<typeof view.whole>[0]) => {
        reads.push(`${key.kind}/${key.name}`);
        return view.whole(key);
      },
    },
    config: conversionConfigSchema.parse(view.list('crdconfig')[0]) as ConversionConfig,
  };
}

describe('ConfigVerdicts', () => {
  it('compiles the whole config against the whole target, read again from the bus once per revision', async () => {
    const { view, reads, config: held } = countingView(crd(1));
    expect(held.spec.spokes[0]?.rules, 'the view keeps the config without its rules').toEqual([]);
    const verdicts = new ConfigVerdicts();
    expect(verdicts.of(view, held), 'unknown before it is prepared').toBeUndefined();
    await verdicts.prepare(view, held);
    expect(verdicts.of(view, held)).toEqual({ verdict: 'Compiled', warnings: [] });
    await verdicts.prepare(view, held);
    expect(reads).toEqual(['crdconfig/widgets', `crd/${TARGET}`]);
  });

  it('compiles again when the target’s spec changes, and fails closed on what the new schema breaks', async () => {
    const verdicts = new ConfigVerdicts();
    const before = countingView(crd(1));
    await verdicts.prepare(before.view, before.config);
    const after = countingView(crd(2, 'count'));
    expect(
      verdicts.of(after.view, after.config),
      'a new generation of the target is not known yet',
    ).toBeUndefined();
    await verdicts.prepare(after.view, after.config);
    expect(verdicts.of(after.view, after.config)?.verdict).toBe('Invalid');
  });

  it('says the target is missing without reading anything when the view holds none', async () => {
    const view = fakeView([['crdconfig', config]]);
    const held = conversionConfigSchema.parse(view.list('crdconfig')[0]);
    const verdicts = new ConfigVerdicts();
    await verdicts.prepare(view, held);
    expect(verdicts.of(view, held)).toEqual({
      verdict: 'TargetMissing',
      targetKind: 'CustomResourceDefinition',
      targetName: TARGET,
    });
  });

  it('compiles from a view that keeps both whole, with no read', () => {
    const view = fakeView(
      [
        ['crdconfig', config],
        ['crd', crd(1)],
      ],
      0,
      {},
    );
    expect(new ConfigVerdicts().of(view, conversionConfigSchema.parse(config))).toEqual({
      verdict: 'Compiled',
      warnings: [],
    });
  });

  it('refuses to decide when a record cannot be read again', async () => {
    const { view, config: held } = countingView(crd(1));
    const verdicts = new ConfigVerdicts();
    await expect(
      verdicts.prepare({ ...view, whole: () => Promise.resolve(undefined) }, held),
    ).rejects.toThrow(/could not be read again/);
    expect(verdicts.of(view, held)).toBeUndefined();
  });
});
