import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import type { TargetSchema } from '../schema.ts';
import { arrayOf, bool, compiled, int, obj, object, root, spec, str, versions } from '../test-support.ts';

const num = (): TargetSchema => ({ type: 'number' });

const join = (hubPath: string, spokePath: string, separator = ',') => ({
  strategy: 'ListJoin',
  listJoin: { hubPath, spokePath, separator },
});
const split = (hubPath: string, spokePath: string, separator = ',') => ({
  strategy: 'ListSplit',
  listSplit: { hubPath, spokePath, separator },
});

function refusal(
  hub: Record<string, TargetSchema>,
  spoke: Record<string, TargetSchema>,
  rules: unknown[],
): string {
  const result = compile(spec('v2', { v1: rules }), versions({ v2: root(hub), v1: root(spoke) }));
  expect(result.ok).toBe(false);
  return result.ok ? '' : result.diagnostics.map((d) => d.message).join('\n');
}

function specOf(result: ReturnType<typeof convert>): unknown {
  return result.ok ? (result.object as { spec: unknown }).spec : result.error.message;
}

describe('ListJoin and ListSplit', () => {
  const router = compiled(
    { dnsServers: arrayOf(str()), allowedCIDRsCSV: str(), ports: arrayOf(int()) },
    { dnsServersCSV: str(), allowedCIDRs: arrayOf(str()), portList: str() },
    [
      join('spec.dnsServers', 'spec.dnsServersCSV'),
      split('spec.allowedCIDRsCSV', 'spec.allowedCIDRs'),
      join('spec.ports', 'spec.portList', ', '),
    ],
  );

  it('join a hub array and split a hub string, and back, as the reference docs show', () => {
    const hub = object('v2', {
      dnsServers: ['8.8.8.8', '1.1.1.1'],
      allowedCIDRsCSV: '10.0.0.0/8,192.168.0.0/16',
      ports: [80, 443],
    });
    const down = convert(router, hub, 'v2', 'v1');
    expect(specOf(down)).toEqual({
      dnsServersCSV: '8.8.8.8,1.1.1.1',
      allowedCIDRs: ['10.0.0.0/8', '192.168.0.0/16'],
      portList: '80, 443',
    });
    expect(specOf(convert(router, (down as { object: unknown }).object, 'v1', 'v2'))).toEqual(hub.spec);
  });

  it('are lossless both ways, as the reference counts them', () => {
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('read the empty string as the empty array, and write items as Go formats them', () => {
    const typed = compiled({ n: arrayOf(num()), b: arrayOf(bool()) }, { n: str(), b: str() }, [
      join('spec.n', 'spec.n'),
      join('spec.b', 'spec.b'),
    ]);
    expect(specOf(convert(typed, object('v1', { n: '', b: '' }), 'v1', 'v2'))).toEqual({ n: [], b: [] });
    expect(
      specOf(convert(typed, object('v2', { n: [1e21, 1.5, -0, 1e-7], b: [true, false] }), 'v2', 'v1')),
    ).toEqual({
      n: '1000000000000000000000,1.5,0,0.0000001',
      b: 'true,false',
    });
    expect(specOf(convert(typed, object('v1', { n: '1,1000,5', b: 'true,false' }), 'v1', 'v2'))).toEqual({
      n: [1, 1000, 5],
      b: [true, false],
    });
    // Spellings the reference reads but that would not join back as written are refused here.
    const respelled = convert(typed, object('v1', { n: ' 1,1e3,+5', b: 'T,0' }), 'v1', 'v2');
    expect(respelled).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/reads as 1, which joins back as "1"/) },
    });
  });

  describe('fail the conversion as the reference does', () => {
    it.each([
      [
        'joining a value that is not an array',
        'v2',
        { dnsServers: 'a' },
        /listJoin: value at "spec.dnsServers" is not an array/,
      ],
      [
        'joining an item that is not a scalar',
        'v2',
        { dnsServers: ['a', { x: 1 }] },
        /listJoin: element 1: cannot coerce/,
      ],
      ['joining a null item', 'v2', { dnsServers: [null] }, /listJoin: element 0: cannot coerce/],
      [
        'splitting a value that is not a string',
        'v1',
        { dnsServersCSV: ['a'] },
        /listSplit: value at "spec.dnsServersCSV" is not a string/,
      ],
    ])('%s', (_, version, fields, message) => {
      expect(
        specOf(convert(router, object(version, fields), version, version === 'v2' ? 'v1' : 'v2')),
      ).toMatch(message);
    });

    it('splitting a part the item type cannot hold', () => {
      expect(specOf(convert(router, object('v1', { portList: '80, http' }), 'v1', 'v2'))).toMatch(
        /listSplit: element 1: cannot coerce "http" to a number/,
      );
    });
  });

  describe('refuse at compile time', () => {
    it.each([
      [
        'an array side that is not an array',
        { a: str() },
        { s: str() },
        /to be an array with a known item schema; it is string/,
      ],
      [
        'an array of objects',
        { a: arrayOf(obj({ x: str() })) },
        { s: str() },
        /items of the hub array spec\.a are object/,
      ],
      [
        'a string side that is not a string',
        { a: arrayOf(str()) },
        { s: int() },
        /the spoke field spec\.s to be a string; it is integer/,
      ],
      ['an unknown path', { a: arrayOf(str()) }, { s: str() }, /declares no field spec\.t/],
    ])('%s', (name, hub, spoke, message) => {
      const spokePath = name === 'an unknown path' ? 'spec.t' : 'spec.s';
      expect(refusal(hub, spoke, [join('spec.a', spokePath)])).toMatch(message);
    });

    it('ListSplit with the array on the hub', () => {
      expect(refusal({ a: arrayOf(str()) }, { s: arrayOf(str()) }, [split('spec.a', 'spec.s')])).toMatch(
        /ListSplit needs the hub field spec\.a to be a string/,
      );
    });
  });

  describe('round trips', () => {
    const lists = compiled(
      { names: arrayOf(str()), ports: arrayOf(int()), csv: str() },
      { names: str(), ports: str(), csv: arrayOf(str()) },
      [
        join('spec.names', 'spec.names'),
        join('spec.ports', 'spec.ports', ';'),
        split('spec.csv', 'spec.csv'),
      ],
    );
    // The documented domain: no item holds the separator, and [""] is not an array of one.
    const item = fc.string().filter((s) => !s.includes(','));
    const names = fc.array(item).filter((a) => !(a.length === 1 && a[0] === ''));

    it('restore hub arrays and strings whose items hold no separator', () => {
      fc.assert(
        fc.property(names, fc.array(fc.integer()), (n, p) => {
          const hub = object('v2', { names: n, ports: p, csv: n.join(',') });
          const down = convert(lists, hub, 'v2', 'v1');
          expect(specOf(convert(lists, (down as { object: unknown }).object, 'v1', 'v2'))).toEqual(hub.spec);
        }),
      );
    });

    it('restore spoke strings and arrays in canonical spelling', () => {
      fc.assert(
        fc.property(names, fc.array(fc.integer()), (n, p) => {
          const spoke = object('v1', { names: n.join(','), ports: p.join(';'), csv: n });
          const up = convert(lists, spoke, 'v1', 'v2');
          expect(specOf(convert(lists, (up as { object: unknown }).object, 'v2', 'v1'))).toEqual(spoke.spec);
        }),
      );
    });

    it('refuse what the reference converts and changes on the way back: [""], an item holding the separator, "07"', () => {
      const empty = convert(lists, object('v2', { names: [''], ports: [7] }), 'v2', 'v1');
      expect(empty).toMatchObject({
        ok: false,
        error: { message: expect.stringMatching(/the list \[""\] joins to ""/) },
      });
      const holding = convert(lists, object('v2', { names: ['a,b'] }), 'v2', 'v1');
      expect(holding).toMatchObject({
        ok: false,
        error: { message: expect.stringMatching(/element 0 \("a,b"\) holds the separator ","/) },
      });
      const respelled = convert(lists, object('v1', { ports: '07' }), 'v1', 'v2');
      expect(respelled).toMatchObject({
        ok: false,
        error: { message: expect.stringMatching(/element 0 \("07"\) reads as 7/) },
      });
      expect(specOf(convert(lists, object('v1', { ports: '7;8' }), 'v1', 'v2'))).toEqual({ ports: [7, 8] });
    });

    it('never throw, whatever the fields hold', () => {
      const anything = fc.oneof(fc.jsonValue(), fc.array(fc.jsonValue(), { maxLength: 200 }), fc.string());
      fc.assert(
        fc.property(
          fc.dictionary(fc.constantFrom('names', 'ports', 'csv', 'other'), anything),
          fc.boolean(),
          (fields, down) => {
            const result = down
              ? convert(lists, object('v2', fields), 'v2', 'v1')
              : convert(lists, object('v1', fields), 'v1', 'v2');
            expect(typeof result.ok).toBe('boolean');
          },
        ),
      );
    });
  });
});
