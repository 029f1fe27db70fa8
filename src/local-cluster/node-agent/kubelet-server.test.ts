import { describe, expect, it } from 'vitest';
import { parseLogQuery, tailOffset } from './kubelet-server.ts';

describe('parseLogQuery', () => {
  it('reads what kubectl logs sends', () => {
    expect(
      parseLogQuery(new URLSearchParams('follow=true&previous=true&tailLines=3&limitBytes=100')),
    ).toEqual({
      follow: true,
      previous: true,
      tailLines: 3,
      limitBytes: 100,
    });
    expect(parseLogQuery(new URLSearchParams(''))).toEqual({
      follow: false,
      previous: false,
      tailLines: undefined,
      limitBytes: undefined,
    });
  });

  it('refuses what it cannot honour rather than ignore it, and a count that is not one', () => {
    expect(parseLogQuery(new URLSearchParams('timestamps=true'))).toMatchObject({ error: /timestamps/ });
    expect(parseLogQuery(new URLSearchParams('sinceSeconds=10'))).toMatchObject({ error: /sinceSeconds/ });
    expect(parseLogQuery(new URLSearchParams('timestamps=false'))).not.toHaveProperty('error');
    expect(parseLogQuery(new URLSearchParams('tailLines=-1'))).toMatchObject({ error: /tailLines/ });
    expect(parseLogQuery(new URLSearchParams('limitBytes=1.5'))).toMatchObject({ error: /limitBytes/ });
  });
});

describe('tailOffset', () => {
  const text = Buffer.from('one\ntwo\nthree\n');
  it('starts the last n lines, a trailing newline ending the last one', () => {
    expect(text.subarray(tailOffset(text, 1)).toString()).toBe('three\n');
    expect(text.subarray(tailOffset(text, 2)).toString()).toBe('two\nthree\n');
    expect(text.subarray(tailOffset(text, 3)).toString()).toBe('one\ntwo\nthree\n');
    expect(text.subarray(tailOffset(text, 10)).toString()).toBe('one\ntwo\nthree\n');
    expect(text.subarray(tailOffset(text, 0)).toString()).toBe('');
  });

  it('counts a last line without its newline, and an empty file has nothing', () => {
    const open = Buffer.from('one\ntwo');
    expect(open.subarray(tailOffset(open, 1)).toString()).toBe('two');
    expect(tailOffset(Buffer.alloc(0), 3)).toBe(0);
  });
});
