import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { JsonPatchOperation } from '../../api/rules.ts';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import { deepCopy } from '../json.ts';
import type { TargetSchema } from '../schema.ts';
import {
  bool,
  compiled,
  int,
  mapOf,
  obj,
  object,
  refusal,
  root,
  spec,
  str,
  versions,
} from '../test-support.ts';

const anything: TargetSchema = { 'x-kubernetes-preserve-unknown-fields': true };

const patchRule = (
  hubToSpoke: unknown[],
  spokeToHub: unknown[] = [],
  extra: Record<string, unknown> = { losslessOverride: true },
  acknowledgeLossy = true,
) => ({ strategy: 'JSONPatch', jsonPatch: { hubToSpoke, spokeToHub, ...extra }, acknowledgeLossy });

const specOf = (result: ReturnType<typeof convert>) =>
  result.ok ? (result.object as { spec: unknown }).spec : { failed: result.error.message };

// The reference docs' example: legacyFlag on the hub is legacyFlagV2 on the spoke.
const docsHub = { legacyFlag: bool(), keep: str() };
const docsSpoke = { legacyFlagV2: bool(), keep: str() };
const docs = compiled(docsHub, docsSpoke, [
  patchRule(
    [{ op: 'move', from: '/spec/legacyFlag', path: '/spec/legacyFlagV2' }],
    [{ op: 'move', from: '/spec/legacyFlagV2', path: '/spec/legacyFlag' }],
  ),
]);

describe('JSONPatch', () => {
  it('applies each direction’s patch (the docs’ move), lossless with losslessOverride', () => {
    expect(specOf(convert(docs, object('v2', { legacyFlag: true, keep: 'k' }), 'v2', 'v1'))).toEqual({
      keep: 'k',
      legacyFlagV2: true,
    });
    expect(specOf(convert(docs, object('v1', { legacyFlagV2: false }), 'v1', 'v2'))).toEqual({
      legacyFlag: false,
    });
    expect(docs.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('is lossy both ways without losslessOverride', () => {
    const rules = (ack: boolean) => [
      patchRule([{ op: 'move', from: '/spec/legacyFlag', path: '/spec/legacyFlagV2' }], [], {}, ack),
    ];
    expect(compiled(docsHub, docsSpoke, rules(true)).spokes.get('v1')?.lossless).toEqual({
      hubToSpoke: false,
      spokeToHub: false,
    });
    const unacknowledged = refusal(docsHub, docsSpoke, rules(false));
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
  });

  it('fails the conversion where the patch does not apply, and leaves the input as it was', () => {
    const input = object('v1', { keep: 'k' });
    const before = JSON.stringify(input);
    expect(specOf(convert(docs, input, 'v1', 'v2'))).toEqual({
      failed: expect.stringMatching(/jsonPatch: apply: .*error in move: missing key legacyFlagV2/),
    });
    expect(JSON.stringify(input)).toBe(before);
  });

  it('claims every path and from of both directions on both sides', () => {
    const conflicting = refusal(docsHub, docsSpoke, [
      patchRule([{ op: 'move', from: '/spec/legacyFlag', path: '/spec/legacyFlagV2' }]),
      { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.keep', spokePath: 'spec.keep' } },
      patchRule([], [{ op: 'test', path: '/spec/keep', value: 'k' }]),
    ]);
    expect(conflicting.map((d) => d.code)).toContain('ConflictingRules');
  });

  it('refuses add/replace without a value (null counts as none) and move/copy without a from', () => {
    const refused = refusal(docsHub, docsSpoke, [
      patchRule(
        [
          { op: 'add', path: '/spec/keep', value: null },
          { op: 'replace', path: '/spec/keep' },
          { op: 'move', path: '/spec/keep', from: '' },
          { op: 'copy', path: '/spec/keep' },
        ],
        [],
      ),
    ]);
    expect(refused.map((d) => d.message)).toEqual([
      expect.stringMatching(/hubToSpoke\[0\]: add needs a value/),
      expect.stringMatching(/hubToSpoke\[1\]: replace needs a value/),
      expect.stringMatching(/hubToSpoke\[2\]: move needs a non-empty from/),
      expect.stringMatching(/hubToSpoke\[3\]: copy needs a non-empty from/),
    ]);
  });

  it('refuses a claimed object whose fields the two sides declare differently, as the reference’s coverage does', () => {
    const refused = refusal({ c: obj({ x: str() }) }, { c: obj({ x: int() }) }, [
      patchRule([{ op: 'replace', path: '/spec/c', value: { x: 'p' } }]),
    ]);
    expect(refused.map((d) => d.code)).toEqual(['UnclaimedField', 'UnclaimedField']);
    expect(refused[0]?.message).toMatch(/claims spec\.c as one field.*spec\.c\.x/);
  });
});

// Each case as the reference converts it (evanphx/json-patch v5.9.11 and the reference's
// identity and pass-through ops after it), hub → spoke, over this input.
describe('JSONPatch as evanphx/json-patch and the reference apply it', () => {
  const schema = { items: anything, o: anything, a: str(), b: str(), n: anything };
  const input = { items: [1, 2, 3], o: { x: 'X', list: [null, 1] }, a: 'A', n: null };
  const rest = { items: [1, 2, 3], o: { x: 'X', list: [null, 1] }, n: null };
  const cases: [string, JsonPatchOperation[], unknown][] = [
    [
      'appends with "-", seen once the array itself is a patch path',
      [
        { op: 'add', path: '/spec/items/-', value: 4 },
        { op: 'copy', from: '/spec/items', path: '/spec/items' },
      ],
      { ...rest, a: 'A', items: [1, 2, 3, 4] },
    ],
    [
      'inserts before a negative index counted from the end',
      [
        { op: 'add', path: '/spec/items/-1', value: 9 },
        { op: 'copy', from: '/spec/items', path: '/spec/items' },
      ],
      { ...rest, a: 'A', items: [1, 2, 3, 9] },
    ],
    [
      'removes at a negative index',
      [
        { op: 'remove', path: '/spec/items/-3' },
        { op: 'copy', from: '/spec/items', path: '/spec/items' },
      ],
      { ...rest, a: 'A', items: [2, 3] },
    ],
    [
      'reads an index with a sign or leading zeros',
      [
        { op: 'replace', path: '/spec/items/+01', value: 9 },
        { op: 'copy', from: '/spec/items', path: '/spec/items' },
      ],
      { ...rest, a: 'A', items: [1, 9, 3] },
    ],
    [
      'changes nothing with a patch inside an array alone (the identity op puts it back)',
      [{ op: 'add', path: '/spec/items/0', value: 0 }],
      input,
    ],
    [
      'changes nothing with a patch inside a map alone',
      [{ op: 'add', path: '/spec/o/a~1b~0c', value: 1 }],
      input,
    ],
    ['add replaces an existing key', [{ op: 'add', path: '/spec/a', value: 'Z' }], { ...rest, a: 'Z' }],
    ['move leaves no source', [{ op: 'move', from: '/spec/a', path: '/spec/b' }], { ...rest, b: 'A' }],
    [
      'copy drops its source too (claimed, not a path)',
      [{ op: 'copy', from: '/spec/a', path: '/spec/b' }],
      { ...rest, b: 'A' },
    ],
    [
      'test of null passes for an absent key',
      [
        { op: 'test', path: '/spec/b', value: null },
        { op: 'replace', path: '/spec/a', value: 'ok' },
      ],
      { ...rest, a: 'ok' },
    ],
    ['ignores the first segment of a pointer', [{ op: 'add', path: 'anything/a', value: 'Z' }], input],
    ['fails an index past the end', [{ op: 'add', path: '/spec/items/4', value: 9 }], 'fails'],
    ['fails add into a missing parent', [{ op: 'add', path: '/spec/new/x', value: 1 }], 'fails'],
    ['fails add into null', [{ op: 'add', path: '/spec/n/x', value: 1 }], 'fails'],
    ['fails replace of a missing key', [{ op: 'replace', path: '/spec/b', value: 'B' }], 'fails'],
    ['fails remove of a missing key', [{ op: 'remove', path: '/spec/b' }], 'fails'],
    [
      'fails a test that does not hold',
      [
        { op: 'test', path: '/spec/a', value: 'A' },
        { op: 'test', path: '/spec/o/x', value: 'Y' },
      ],
      'fails',
    ],
    [
      'fails test of null at a missing array index',
      [{ op: 'test', path: '/spec/items/7', value: null }],
      'fails',
    ],
    [
      'fails test of an array holding null',
      [{ op: 'test', path: '/spec/o/list', value: [null, 1] }],
      'fails',
    ],
    [
      'fails test of a number against a string',
      [
        { op: 'test', path: '/spec/items/0', value: 1.0 },
        { op: 'test', path: '/spec/items/1', value: '2' },
      ],
      'fails',
    ],
    [
      'fails any patch with a path naming the whole object',
      [{ op: 'test', path: '', value: { a: 1 } }],
      'fails',
    ],
  ];

  it.each(cases)('%s', (_name, operations, expected) => {
    const router = compiled(schema, schema, [patchRule(operations)]);
    const result = convert(router, object('v2', input), 'v2', 'v1');
    if (expected === 'fails') expect(result.ok).toBe(false);
    else expect(specOf(result)).toEqual(expected);
  });

  it('writes metadata and kind from the patch without claiming or sharing them', () => {
    const router = compiled(schema, schema, [
      patchRule([
        { op: 'add', path: '/metadata/labels/tier', value: 'gold' },
        { op: 'replace', path: '/kind', value: 'Gadget' },
      ]),
    ]);
    const original = object('v2', input);
    const result = convert(router, original, 'v2', 'v1');
    expect(result).toMatchObject({
      ok: true,
      object: { kind: 'Gadget', metadata: { name: 'w1', labels: { app: 'w', tier: 'gold' } } },
    });
    expect(original.metadata.labels).toEqual({ app: 'w' });
    const back = convert(router, object('v1', input), 'v1', 'v2');
    expect(back).toMatchObject({ ok: true, object: { kind: 'Widget', metadata: { labels: { app: 'w' } } } });
  });

  it('puts back, over a claimed object, its other leaves and undeclared fields the input has', () => {
    const router = compiled({ c: obj({ x: str(), y: str() }) }, { c: obj({ x: str(), y: str() }) }, [
      patchRule([{ op: 'replace', path: '/spec/c', value: { x: 'p', y: 'q', extra: 1 } }]),
    ]);
    expect(specOf(convert(router, object('v2', { c: { x: 'X', other: 2 } }), 'v2', 'v1'))).toEqual({
      c: { x: 'X', y: 'q', extra: 1, other: 2 },
    });
    const nulled = compiled({ c: obj({ x: str() }) }, { c: obj({ x: str() }) }, [
      patchRule([
        { op: 'replace', path: '/spec/c', value: 0 },
        { op: 'copy', from: '/spec/n', path: '/spec/c' },
      ]),
    ]);
    expect(specOf(convert(nulled, object('v2', { c: { x: 'X' }, n: null }), 'v2', 'v1'))).toEqual({
      failed: expect.stringMatching(/the patch left spec\.c null/),
    });
  });
});

describe('JSONPatch properties', () => {
  const hub = { legacyFlag: anything, keep: str() };
  const spoke = { legacyFlagV2: anything, keep: str() };
  const router = compiled(hub, spoke, [
    patchRule(
      [{ op: 'move', from: '/spec/legacyFlag', path: '/spec/legacyFlagV2' }],
      [{ op: 'move', from: '/spec/legacyFlagV2', path: '/spec/legacyFlag' }],
    ),
  ]);

  it('a move and its inverse round-trip any value both ways', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.boolean(), (value, fromHub) => {
        const [from, to, field] = fromHub ? ['v2', 'v1', 'legacyFlag'] : ['v1', 'v2', 'legacyFlagV2'];
        const original = object(from, { keep: 'k', [field]: value });
        const there = convert(router, original, from, to);
        expect(there.ok).toBe(true);
        if (there.ok) expect(convert(router, there.object, to, from)).toEqual({ ok: true, object: original });
      }),
    );
  });

  it('applies any patch to any object without throwing or changing the input', () => {
    const pointer = fc.oneof(
      fc.constantFrom(
        '',
        '/',
        '/spec',
        '/spec/a',
        '/spec/a/0',
        '/spec/a/-',
        '/spec/a/-1',
        '/spec/m/k',
        '//x',
        'x',
      ),
      fc
        .array(fc.constantFrom('spec', 'a', 'm', 'k', '0', '-', '-1', '', '~0', '~1'), { maxLength: 4 })
        .map((parts) => `/${parts.join('/')}`),
    );
    const operation = fc.record(
      {
        op: fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test'),
        path: pointer,
        from: pointer,
        value: fc.jsonValue(),
      },
      { requiredKeys: ['op', 'path'] },
    );
    const schema = { a: anything, m: mapOf(str()) };
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 4 }), fc.jsonValue(), (operations, value) => {
        const result = compile(
          spec('v2', { v1: [patchRule(operations)] }),
          versions({ v2: root(schema), v1: root(schema) }),
        );
        if (!result.ok) return;
        const input = object('v2', { a: value, m: { k: 'v' } });
        const before = deepCopy(input);
        expect(typeof convert(result.router, input, 'v2', 'v1').ok).toBe('boolean');
        expect(input).toEqual(before);
      }),
    );
  });
});
