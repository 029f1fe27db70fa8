// Each deliberate difference from the reference engine that no corpus case happens to show, shown
// on a small example through both engines, so the claim in docs/migrating-from-the-reference-
// operator.md is a measured one: if the reference stopped doing what the doc says, this fails.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile, type TargetVersion } from '../../src/engine/compile.ts';
import { convert } from '../../src/engine/convert.ts';
import { ReferenceEngine } from './reference-engine.ts';

let reference: ReferenceEngine;
beforeAll(() => {
  reference = ReferenceEngine.start();
});
afterAll(async () => {
  await reference?.close();
});

const spec = {
  targetXRD: { name: 'xs.example.org' },
  hubVersion: 'v2',
  spokes: [{ version: 'v1', rules: [] }],
};
const object = {
  apiVersion: 'example.org/v1',
  kind: 'X',
  metadata: { name: 'a' },
  spec: { size: 3 },
  status: { ready: true },
};

async function referenceConverts(versions: TargetVersion[]): Promise<unknown> {
  const compiled = await reference.compile(spec, versions);
  if (!compiled.ok) throw new Error(`the reference refuses: ${JSON.stringify(compiled)}`);
  const converted = await reference.convert(compiled.handle, object, 'v1', 'v2');
  await reference.release(compiled.handle);
  if (!converted.ok) throw new Error(`the reference cannot convert: ${JSON.stringify(converted)}`);
  return converted.object;
}

describe('deliberate differences from the reference engine, each shown', () => {
  it('versions without a schema: the reference drops every field but kind and metadata; Switchyard refuses the config', async () => {
    const versions: TargetVersion[] = [
      { name: 'v2', served: true, storage: true, schema: undefined },
      { name: 'v1', served: true, storage: false, schema: undefined },
    ];
    expect(await referenceConverts(versions)).toEqual({
      apiVersion: 'example.org/v2',
      kind: 'X',
      metadata: { name: 'a' },
    });
    const compiled = compile({ hubVersion: 'v2', spokes: [{ version: 'v1', rules: [] }] }, versions);
    expect(compiled.ok).toBe(false);
    if (!compiled.ok) expect(compiled.diagnostics.map((d) => d.code)).toContain('MissingSchema');
  });

  it('fields no schema declares: the reference drops them at the top level; Switchyard keeps them', async () => {
    const schema = {
      type: 'object',
      properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
    };
    const versions: TargetVersion[] = [
      { name: 'v2', served: true, storage: true, schema },
      { name: 'v1', served: true, storage: false, schema },
    ];
    expect(await referenceConverts(versions)).toEqual({
      apiVersion: 'example.org/v2',
      kind: 'X',
      metadata: { name: 'a' },
      spec: { size: 3 },
    });
    const compiled = compile({ hubVersion: 'v2', spokes: [{ version: 'v1', rules: [] }] }, versions);
    if (!compiled.ok) throw new Error('Switchyard refuses');
    expect(convert(compiled.router, object, 'v1', 'v2')).toEqual({
      ok: true,
      object: { ...object, apiVersion: 'example.org/v2' },
    });
  });
});
