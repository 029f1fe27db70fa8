import { describe, expect, it } from 'vitest';
import { type Identity, relistDiff } from './relist-diff.ts';

const id = (name: string, uid: string, resourceVersion: string): Identity => ({
  name,
  namespace: 'ns',
  uid,
  resourceVersion,
});
const listed = (name: string, uid: string, resourceVersion: string) => ({
  metadata: { name, namespace: 'ns', uid, resourceVersion },
});

describe('relistDiff', () => {
  const known = new Map([
    ['ns/same', id('same', 'u1', '5')],
    ['ns/updated', id('updated', 'u2', '5')],
    ['ns/deleted', id('deleted', 'u3', '5')],
    ['ns/recreated', id('recreated', 'u4', '5')],
  ]);
  const diff = relistDiff(known, [
    listed('same', 'u1', '5'),
    listed('updated', 'u2', '9'),
    listed('recreated', 'u5', '10'),
    listed('new', 'u6', '11'),
  ]);

  it('records what changed or is new, and nothing that the bus already has', () => {
    expect(diff.changed.map((o) => o.metadata.name).sort()).toEqual(['new', 'recreated', 'updated']);
  });

  it('tombstones what is gone and the old incarnation of a recreated object', () => {
    expect(diff.gone.map((o) => `${o.name}:${o.uid}`).sort()).toEqual(['deleted:u3', 'recreated:u4']);
  });

  it('is empty when the list and the bus agree', () => {
    expect(relistDiff(new Map([['ns/same', id('same', 'u1', '5')]]), [listed('same', 'u1', '5')])).toEqual({
      gone: [],
      changed: [],
    });
  });
});
