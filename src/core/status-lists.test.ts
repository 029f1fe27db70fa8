import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { STATUS_LIST_MAX, webhookServerStatusSchema } from '../api/webhook-server.ts';
import { targetListStatus } from './status-lists.ts';

const names = (n: number) => Array.from({ length: n }, (_, i) => `widgets${i}.example.com`);

describe('status target lists', () => {
  it('publishes the full sorted list up to the bound', () => {
    const status = targetListStatus(['b.x.io', 'a.x.io', 'b.x.io']);
    expect(status).toMatchObject({ targets: ['a.x.io', 'b.x.io'], count: 2 });
    expect(targetListStatus(names(STATUS_LIST_MAX)).targets).toHaveLength(STATUS_LIST_MAX);
  });

  it('publishes only count and digest above the bound, and the status schema accepts it (repro: unbounded lists)', () => {
    const status = targetListStatus(names(50_000));
    expect(status.targets).toBeUndefined();
    expect(status.count).toBe(50_000);
    const parsed = webhookServerStatusSchema.safeParse({
      servedTargets: status.targets,
      servedTargetCount: status.count,
      servedTargetsDigest: status.digest,
    });
    expect(parsed.success).toBe(true);
    expect(webhookServerStatusSchema.safeParse({ servedTargets: names(STATUS_LIST_MAX + 1) }).success).toBe(
      false,
    );
  });

  it('digests what `LC_ALL=C sort | sha256sum` prints, whatever the input order', () => {
    const list = ['b.x.io', 'a.x.io', 'B.x.io'];
    const expected = createHash('sha256').update('B.x.io\na.x.io\nb.x.io\n').digest('hex');
    expect(targetListStatus(list).digest).toBe(`sha256:${expected}`);
    expect(targetListStatus([...list].reverse()).digest).toBe(`sha256:${expected}`);
    expect(targetListStatus(['a.x.io']).digest).not.toBe(targetListStatus(['b.x.io']).digest);
  });
});
