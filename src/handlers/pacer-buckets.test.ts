import { describe, expect, it } from 'vitest';
import { NATS_IDENTITIES, natsPermissions } from '../access/nats-permissions.ts';
import { bucketStream } from '../bus/topology.ts';
import { defaultConfig } from '../config/schema.ts';
import { PACER_BUCKETS } from './pacer-buckets.ts';

const CREATE = '$JS.API.STREAM.CREATE.';
const UPDATE = '$JS.API.STREAM.UPDATE.';

describe('PACER_BUCKETS', () => {
  const config = defaultConfig();
  const grants = (id: (typeof NATS_IDENTITIES)[number]) => natsPermissions(id, config).publish;

  it('are every bucket a pacer may create, so bus setup brings each one to bus.streamReplicas', () => {
    const created = NATS_IDENTITIES.filter((id) => id !== 'bus-setup')
      .flatMap(grants)
      .filter((s) => s.startsWith(`${CREATE}KV_`))
      .map((s) => s.slice(CREATE.length));
    expect(
      new Set(PACER_BUCKETS.map(bucketStream)),
      'a bucket missing here keeps the replicas it was created with whatever bus setup applies',
    ).toEqual(new Set(created));
    expect(PACER_BUCKETS).toContain('pacer-assign');
    expect(PACER_BUCKETS).toContain('pacer-handover-resync');
  });

  it('may be updated by the bus-setup user, never created by it (their pacers create them)', () => {
    const setup = grants('bus-setup');
    for (const bucket of PACER_BUCKETS) {
      expect(setup).toContain(`${UPDATE}${bucketStream(bucket)}`);
      expect(setup).not.toContain(`${CREATE}${bucketStream(bucket)}`);
    }
  });
});
