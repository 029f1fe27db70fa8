// The slot bucket of every pacer the handlers run, one per rate domain: assign's fan-out and each
// handler concern's resync. Each pacer creates its own at start; `switchyard bus setup` brings
// those that exist to bus.streamReplicas as it does the streams, and its NATS user may update
// exactly these (src/access/nats-permissions.ts).
import { ASSIGN_PACER } from './assign.ts';
import { CONCERNS } from './concerns.ts';
import { resyncPacerOf } from './resync.ts';

export const PACER_BUCKETS: readonly string[] = [
  ASSIGN_PACER.bucket,
  ...CONCERNS.map(({ concern }) => resyncPacerOf(concern).bucket),
];
