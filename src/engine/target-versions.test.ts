import { describe, expect, it } from 'vitest';
import { targetVersions } from './target-versions.ts';

const schema = { type: 'object', properties: { spec: { type: 'object' } } };

describe('targetVersions', () => {
  it('reads a CRD: storage marks the hub candidate', () => {
    const crd = {
      kind: 'CustomResourceDefinition',
      spec: {
        versions: [
          { name: 'v2', served: true, storage: true, schema: { openAPIV3Schema: schema } },
          { name: 'v1', served: false, storage: false, schema: { openAPIV3Schema: schema } },
        ],
      },
    };
    expect(targetVersions(crd)).toEqual([
      { name: 'v2', served: true, storage: true, schema },
      { name: 'v1', served: false, storage: false, schema },
    ]);
  });

  it('reads an XRD: referenceable is its storage version', () => {
    const xrd = {
      spec: {
        versions: [{ name: 'v1', served: true, referenceable: true, schema: { openAPIV3Schema: schema } }],
      },
    };
    expect(targetVersions(xrd)).toEqual([{ name: 'v1', served: true, storage: true, schema }]);
  });

  it('reads a malformed target as versions without what is missing, never as a guess', () => {
    expect(targetVersions(undefined)).toEqual([]);
    expect(targetVersions({ spec: { versions: [{ served: true }, { name: 'v1', served: 'yes' }] } })).toEqual(
      [{ name: 'v1', served: false, storage: false, schema: undefined }],
    );
  });
});
