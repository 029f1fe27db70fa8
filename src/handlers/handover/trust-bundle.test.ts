import { describe, expect, it } from 'vitest';
import type { TrustBundle } from '../handover.ts';
import { reusedTrustBundles } from './trust-bundle.ts';

const signal = new AbortController().signal;

function fixture() {
  let now = 0;
  const reads: string[] = [];
  const answers = new Map<string, TrustBundle>();
  const pending: (() => void)[] = [];
  let hold = false;
  const reader = reusedTrustBundles(
    async (instance, namespace) => {
      reads.push(`${namespace}/${instance}`);
      if (hold) await new Promise<void>((resolve) => pending.push(resolve));
      return answers.get(instance) ?? { kind: 'unavailable', why: 'no Secret' };
    },
    () => now,
    10_000,
  );
  return {
    reader,
    reads,
    answers,
    advance: (ms: number) => {
      now += ms;
    },
    holdReads: () => {
      hold = true;
    },
    release: () => {
      hold = false;
      for (const resolve of pending.splice(0)) resolve();
    },
  };
}

describe('reusedTrustBundles', () => {
  it('reuses a found bundle for the reuse window, per instance, then reads again', async () => {
    const f = fixture();
    f.answers.set('a', { kind: 'found', caBundle: 'QQ==' });
    f.answers.set('b', { kind: 'found', caBundle: 'Qg==' });
    expect(await f.reader('a', 'ns', signal)).toEqual({ kind: 'found', caBundle: 'QQ==' });
    f.advance(9_999);
    expect(await f.reader('a', 'ns', signal)).toEqual({ kind: 'found', caBundle: 'QQ==' });
    expect(await f.reader('b', 'ns', signal)).toEqual({ kind: 'found', caBundle: 'Qg==' });
    await f.reader('a', 'other', signal);
    expect(f.reads).toEqual(['ns/a', 'ns/b', 'other/a']);
    f.advance(1);
    f.answers.set('a', { kind: 'found', caBundle: 'Um90YXRlZA==' });
    expect(await f.reader('a', 'ns', signal)).toEqual({ kind: 'found', caBundle: 'Um90YXRlZA==' });
    expect(f.reads).toHaveLength(4);
  });

  it('reads anew when told the bundle may have changed, and keeps what it read', async () => {
    const f = fixture();
    f.answers.set('a', { kind: 'found', caBundle: 'QQ==' });
    await f.reader('a', 'ns', signal);
    f.answers.set('a', { kind: 'found', caBundle: 'Um90YXRlZA==' });
    expect(await f.reader('a', 'ns', signal, { fresh: true })).toEqual({
      kind: 'found',
      caBundle: 'Um90YXRlZA==',
    });
    expect(await f.reader('a', 'ns', signal)).toEqual({ kind: 'found', caBundle: 'Um90YXRlZA==' });
    expect(f.reads).toEqual(['ns/a', 'ns/a']);
  });

  it('never keeps a missing bundle: the next move looks again', async () => {
    const f = fixture();
    expect(await f.reader('a', 'ns', signal)).toMatchObject({ kind: 'unavailable' });
    f.answers.set('a', { kind: 'found', caBundle: 'QQ==' });
    expect(await f.reader('a', 'ns', signal)).toEqual({ kind: 'found', caBundle: 'QQ==' });
    expect(f.reads).toHaveLength(2);
  });

  it('lets a burst of moves to one instance share one read', async () => {
    const f = fixture();
    f.answers.set('a', { kind: 'found', caBundle: 'QQ==' });
    f.holdReads();
    const burst = Array.from({ length: 10 }, () => f.reader('a', 'ns', signal));
    f.release();
    expect(new Set((await Promise.all(burst)).map((b) => JSON.stringify(b))).size).toBe(1);
    expect(f.reads).toEqual(['ns/a']);
  });
});
