import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { policyFiles, renderPolicyFile, renderPolicyKustomization } from './admission-policies.ts';

const dir = join(PROJECT_ROOT, 'deploy', 'policies');

describe('deploy/policies', () => {
  it('match the code they are generated from (run `node scripts/gen-policies.ts` after a change)', () => {
    const files = policyFiles();
    expect(readdirSync(dir).sort()).toEqual([...files.keys(), 'kustomization.yaml'].sort());
    for (const [file, objects] of files)
      expect(readFileSync(join(dir, file), 'utf8'), `${file} drifted`).toBe(renderPolicyFile(objects));
    expect(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')).toBe(
      renderPolicyKustomization([...files.keys()]),
    );
  });

  it('binds every policy, denying, and fails closed', () => {
    const objects = [...policyFiles().values()].flat();
    const policies = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicy');
    const bindings = objects.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding');
    expect(policies.length).toBeGreaterThanOrEqual(6);
    for (const policy of policies) {
      const binding = bindings.find(
        (b) => (b.spec as { policyName: string }).policyName === policy.metadata.name,
      );
      expect(binding, policy.metadata.name).toBeDefined();
      expect((binding?.spec as { validationActions: string[] }).validationActions).toEqual(['Deny']);
      expect((policy.spec as { failurePolicy: string }).failurePolicy).toBe('Fail');
    }
  });
});
