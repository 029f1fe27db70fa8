// Writes deploy/nats/authorization.conf, every component's NATS user for the default
// configuration, from src/access. Run after changing a consumer, a subject or a default
// partition count:
//   node scripts/gen-nats-authorization.ts
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderAuthorization } from '../src/access/nats-authorization.ts';
import { defaultConfig } from '../src/config/schema.ts';

const path = join(import.meta.dirname, '..', 'deploy', 'nats', 'authorization.conf');
writeFileSync(path, renderAuthorization({ config: defaultConfig() }));
console.log(`wrote ${path}`);
