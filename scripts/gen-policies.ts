// Writes the ValidatingAdmissionPolicies of src/api/admission-policies.ts into deploy/policies/.
// Run after changing a policy:
//   node scripts/gen-policies.ts
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { policyFiles, renderPolicyFile, renderPolicyKustomization } from '../src/api/admission-policies.ts';

const outDir = join(import.meta.dirname, '..', 'deploy', 'policies');
mkdirSync(outDir, { recursive: true });
// A renamed or removed policy's file would otherwise linger and still be applied.
for (const stale of readdirSync(outDir).filter((f) => f.endsWith('.yaml'))) rmSync(join(outDir, stale));
const files = policyFiles();
for (const [file, objects] of files) {
  writeFileSync(join(outDir, file), renderPolicyFile(objects));
  console.log(`wrote deploy/policies/${file}`);
}
writeFileSync(join(outDir, 'kustomization.yaml'), renderPolicyKustomization([...files.keys()]));
