import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRD_KUSTOMIZATION, renderCrdKustomization, renderCrdYaml } from './crd-yaml.ts';
import { crdFileName, switchyardCrds } from './crds.ts';

const crdDir = join(import.meta.dirname, '..', '..', 'deploy', 'crds');

describe('committed CRDs', () => {
  it('match the zod schemas they are generated from (run `node scripts/gen-crds.ts` after a schema change)', () => {
    const expected = new Map(switchyardCrds().map((crd) => [crdFileName(crd), renderCrdYaml(crd)]));
    expected.set(CRD_KUSTOMIZATION, renderCrdKustomization(switchyardCrds().map(crdFileName)));
    const committed = readdirSync(crdDir).filter((f) => f.endsWith('.yaml'));
    expect(committed.sort()).toEqual([...expected.keys()].sort());
    for (const [file, text] of expected) {
      expect(readFileSync(join(crdDir, file), 'utf8'), `${file} drifted from src/api`).toBe(text);
    }
  });

  it('are cluster-scoped, have a status subresource and one served storage version', () => {
    for (const crd of switchyardCrds()) {
      expect(crd.spec.scope).toBe('Cluster');
      expect(crd.spec.versions).toHaveLength(1);
      expect(crd.spec.versions[0]?.subresources.status).toEqual({});
    }
  });
});

describe('structural schemas', () => {
  // The apiserver rejects a non-structural schema; these are the rules a generator could break.
  function* nodes(schema: unknown, path = '$'): Generator<[string, Record<string, unknown>]> {
    if (typeof schema !== 'object' || schema === null) return;
    const node = schema as Record<string, unknown>;
    yield [path, node];
    for (const [key, child] of Object.entries((node.properties as object | undefined) ?? {})) {
      yield* nodes(child, `${path}.${key}`);
    }
    if (node.items) yield* nodes(node.items, `${path}[]`);
    if (node.additionalProperties) yield* nodes(node.additionalProperties, `${path}{}`);
  }

  it('type every node except schemaless ones, and never branch', () => {
    for (const crd of switchyardCrds()) {
      for (const [path, node] of nodes(crd.spec.versions[0]?.schema.openAPIV3Schema)) {
        const schemaless = node['x-kubernetes-preserve-unknown-fields'] === true;
        expect(node.type !== undefined || schemaless, `${crd.metadata.name} ${path} has no type`).toBe(true);
        for (const banned of ['anyOf', 'oneOf', 'allOf', '$ref', 'nullable']) {
          expect(node[banned], `${crd.metadata.name} ${path} uses ${banned}`).toBeUndefined();
        }
        if (node['x-kubernetes-list-type'] === 'map') {
          const items = node.items as { required?: string[] };
          for (const key of node['x-kubernetes-list-map-keys'] as string[]) {
            expect(items.required, `${path}: list-map key ${key} must be required`).toContain(key);
          }
        }
      }
    }
  });
});
