import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CRD_REFERENCE_PATH, renderCrdReference } from './crd-reference.ts';

describe('docs/crd-reference.md', () => {
  it('is what the CRDs generate now', () => {
    const committed = readFileSync(join(import.meta.dirname, '..', '..', CRD_REFERENCE_PATH), 'utf8');
    expect(committed, `${CRD_REFERENCE_PATH} drifted from src/api: run \`node scripts/gen-crds.ts\``).toBe(
      renderCrdReference(),
    );
  });
});
