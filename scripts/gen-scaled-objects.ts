// Writes the KEDA ScaledObjects of src/api/scaled-objects.ts into deploy/autoscaling/. Run after
// changing a handler's scaling or a default partition count:
//   node scripts/gen-scaled-objects.ts
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderScaledObjects } from '../src/api/scaled-objects.ts';

const file = join(import.meta.dirname, '..', 'deploy', 'autoscaling', 'scaled-objects.yaml');
writeFileSync(file, renderScaledObjects());
console.log('wrote deploy/autoscaling/scaled-objects.yaml');
