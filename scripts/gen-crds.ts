// Writes the CRDs generated from src/api into deploy/crds/, and their field reference into
// docs/crd-reference.md. Run after changing a schema:
//   node scripts/gen-crds.ts
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CRD_REFERENCE_PATH, renderCrdReference } from '../src/api/crd-reference.ts';
import { CRD_KUSTOMIZATION, renderCrdKustomization, renderCrdYaml } from '../src/api/crd-yaml.ts';
import { crdFileName, switchyardCrds } from '../src/api/crds.ts';

const outDir = join(import.meta.dirname, '..', 'deploy', 'crds');
mkdirSync(outDir, { recursive: true });
// Files of a renamed or removed kind would otherwise linger and still be applied.
for (const stale of readdirSync(outDir).filter((f) => f.endsWith('.yaml'))) rmSync(join(outDir, stale));
for (const crd of switchyardCrds()) {
  const path = join(outDir, crdFileName(crd));
  writeFileSync(path, renderCrdYaml(crd));
  console.log(`wrote ${path}`);
}
writeFileSync(join(outDir, CRD_KUSTOMIZATION), renderCrdKustomization(switchyardCrds().map(crdFileName)));
const reference = join(import.meta.dirname, '..', CRD_REFERENCE_PATH);
writeFileSync(reference, renderCrdReference());
console.log(`wrote ${reference}`);
