// Property tests: configs derived at random from a random hub schema, with the rules that
// account for every difference. Each transformation knows whether it loses information, so
// the expected verdict is known independently of the engine.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from './compile.ts';
import { convert, convertOwned } from './convert.ts';
import type { Router } from './plan.ts';
import type { TargetSchema } from './schema.ts';
import { arrayOf, bool, enumOf, int, mapOf, obj, root, spec, str, versions } from './test-support.ts';

const KINDS = ['string', 'int', 'bool', 'enum', 'object', 'array', 'map'] as const;
type Kind = (typeof KINDS)[number];
const TRANSFORMS = [
  'same',
  'rename',
  'nest',
  'remap',
  'fold',
  'deleteHub',
  'defaultSpoke',
  'constantHub',
] as const;
type Transform = (typeof TRANSFORMS)[number];

interface FieldChoice {
  name: string;
  kind: Kind;
  transform: Transform;
  acknowledge: boolean;
}

const ENUM_VALUES = ['Alpha', 'Beta', 'Gamma'];

function fieldSchema(kind: Kind): TargetSchema {
  switch (kind) {
    case 'string':
      return str();
    case 'int':
      return int();
    case 'bool':
      return bool();
    case 'enum':
      return enumOf(...ENUM_VALUES);
    case 'object':
      return obj({ x: str(), y: int() });
    case 'array':
      return arrayOf(str());
    case 'map':
      return mapOf(int());
  }
}

const SAMPLE: Record<Kind, unknown> = {
  string: 's',
  int: 7,
  bool: true,
  enum: 'Beta',
  object: { x: 'a', y: 1 },
  array: ['a'],
  map: { k: 1 },
};

/** Remapping transforms only apply to enum fields, so they make their field one. */
function kindOf(choice: FieldChoice): Kind {
  return choice.transform === 'remap' || choice.transform === 'fold' ? 'enum' : choice.kind;
}

interface Derived {
  hub: Record<string, TargetSchema>;
  spoke: Record<string, TargetSchema>;
  rules: unknown[];
  lossy: { hubToSpoke: boolean; spokeToHub: boolean };
  /** Whether every lossy rule is acknowledged. */
  acknowledged: boolean;
}

function derive(fields: readonly FieldChoice[]): Derived {
  const d: Derived = {
    hub: {},
    spoke: {},
    rules: [],
    lossy: { hubToSpoke: false, spokeToHub: false },
    acknowledged: true,
  };
  const nested: Record<string, TargetSchema> = {};
  for (const f of fields) {
    const kind = kindOf(f);
    const schema = fieldSchema(kind);
    const path = `spec.${f.name}`;
    const lossyRule = (direction: 'hubToSpoke' | 'spokeToHub', rule: Record<string, unknown>) => {
      d.lossy[direction] = true;
      d.acknowledged &&= f.acknowledge;
      d.rules.push({ ...rule, acknowledgeLossy: f.acknowledge });
    };
    switch (f.transform) {
      case 'same':
        d.hub[f.name] = schema;
        d.spoke[f.name] = schema;
        break;
      case 'rename':
        d.hub[f.name] = schema;
        d.spoke[`${f.name}New`] = schema;
        d.rules.push({ strategy: 'FieldRename', fieldRename: { hubPath: path, spokePath: `${path}New` } });
        break;
      case 'nest':
        d.hub[f.name] = schema;
        nested[f.name] = schema;
        d.rules.push({
          strategy: 'FieldRename',
          fieldRename: { hubPath: path, spokePath: `spec.box.${f.name}` },
        });
        break;
      case 'remap':
        d.hub[f.name] = schema;
        d.spoke[f.name] = enumOf(...ENUM_VALUES.map((v) => v.toLowerCase()));
        d.rules.push({
          strategy: 'EnumRemap',
          enumRemap: { path, mapping: ENUM_VALUES.map((v) => ({ hub: v, spoke: v.toLowerCase() })) },
        });
        break;
      case 'fold':
        d.hub[f.name] = schema;
        d.spoke[f.name] = enumOf('ab', 'gamma');
        lossyRule('hubToSpoke', {
          strategy: 'EnumRemap',
          enumRemap: {
            path,
            mapping: [
              { hub: 'Alpha', spoke: 'ab' },
              { hub: 'Beta', spoke: 'ab' },
              { hub: 'Gamma', spoke: 'gamma' },
            ],
          },
        });
        break;
      case 'deleteHub':
        d.hub[f.name] = schema;
        lossyRule('hubToSpoke', { strategy: 'Delete', delete: { path, existsOn: 'Hub' } });
        break;
      case 'constantHub':
        d.hub[f.name] = schema;
        lossyRule('hubToSpoke', {
          strategy: 'Constant',
          constant: { path, existsOn: 'Hub', value: SAMPLE[kind] },
        });
        break;
      case 'defaultSpoke':
        d.spoke[f.name] = schema;
        lossyRule('spokeToHub', {
          strategy: 'DefaultValue',
          defaultValue: { path, existsOn: 'Spoke', default: SAMPLE[kind] },
        });
        break;
    }
  }
  if (Object.keys(nested).length > 0) d.spoke.box = obj(nested);
  // Every version needs a field in common for `spec` itself to be an object with fields.
  d.hub.common = str();
  d.spoke.common = str();
  return d;
}

const fieldsArb = fc.uniqueArray(
  fc.record({
    name: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    kind: fc.constantFrom(...KINDS),
    transform: fc.constantFrom(...TRANSFORMS),
    acknowledge: fc.boolean(),
  }),
  { selector: (f) => f.name, minLength: 1, maxLength: 6 },
);

function valuesOf(schema: TargetSchema): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.properties) {
    const fields = Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, valuesOf(v)]));
    return fc.record(fields, { requiredKeys: [] });
  }
  if (schema.additionalProperties && schema.additionalProperties !== true) {
    return fc.dictionary(fc.string({ minLength: 1, maxLength: 3 }), valuesOf(schema.additionalProperties), {
      maxKeys: 3,
    });
  }
  switch (schema.type) {
    case 'integer':
      return fc.integer();
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(valuesOf(schema.items ?? {}), { maxLength: 3 });
    default:
      return fc.string({ maxLength: 5 });
  }
}

/** Objects that satisfy a version's spec schema, plus status and fields no schema declares. */
function objectOf(version: string, specSchema: Record<string, TargetSchema>) {
  return fc.record(
    {
      apiVersion: fc.constant(`example.org/${version}`),
      kind: fc.constant('Widget'),
      metadata: fc.record({
        name: fc.string({ minLength: 1, maxLength: 5 }),
        labels: fc.dictionary(fc.string(), fc.string()),
      }),
      spec: valuesOf(obj(specSchema)),
      status: fc.record({ conditions: fc.array(fc.record({ type: fc.string() })) }, { requiredKeys: [] }),
      unknownTopLevel: fc.jsonValue({ maxDepth: 2 }),
    },
    { requiredKeys: ['apiVersion', 'kind', 'metadata', 'spec'] },
  );
}

function compileDerived(d: Derived, rules = d.rules) {
  const statusSchema = { conditions: arrayOf(obj({ type: str() })) };
  return compile(
    spec('v2', { v1: rules }),
    versions({ v2: root(d.hub, statusSchema), v1: root(d.spoke, statusSchema) }),
  );
}

function roundTrip(router: Router, input: object, from: string, to: string): unknown {
  const there = convert(router, input, from, to);
  if (!there.ok) throw new Error(there.error.message);
  const back = convert(router, there.object, to, from);
  if (!back.ok) throw new Error(back.error.message);
  return back.object;
}

/** A compilable pair of versions (every loss acknowledged) with an object of each. */
const compilableWithObjects = fieldsArb
  .map(derive)
  .filter((d) => d.acknowledged)
  .chain((d) => fc.tuple(fc.constant(d), objectOf('v2', d.hub), objectOf('v1', d.spoke)));

describe('conversion properties', () => {
  it('compiles exactly when every difference is claimed and every loss acknowledged', () => {
    fc.assert(
      fc.property(fieldsArb, fc.option(fc.nat()), (fields, dropAt) => {
        const d = derive(fields);
        const rules =
          dropAt === null || d.rules.length === 0
            ? d.rules
            : d.rules.filter((_, i) => i !== dropAt % d.rules.length);
        const result = compileDerived(d, rules);
        expect(result.ok).toBe(rules.length === d.rules.length && d.acknowledged);
        if (!result.ok) {
          expect(result).not.toHaveProperty('router');
          expect(result.diagnostics.some((x) => x.severity === 'error')).toBe(true);
        } else {
          expect(result.router.spokes.get('v1')?.lossless).toEqual({
            hubToSpoke: !d.lossy.hubToSpoke,
            spokeToHub: !d.lossy.spokeToHub,
          });
        }
      }),
    );
  });

  it('hub → spoke → hub and spoke → hub → spoke are the identity in every lossless direction', () => {
    fc.assert(
      fc.property(compilableWithObjects, ([d, hubObject, spokeObject]) => {
        const result = compileDerived(d);
        if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
        if (!d.lossy.hubToSpoke) expect(roundTrip(result.router, hubObject, 'v2', 'v1')).toEqual(hubObject);
        if (!d.lossy.spokeToHub)
          expect(roundTrip(result.router, spokeObject, 'v1', 'v2')).toEqual(spokeObject);
      }),
    );
  });

  it('never mutates its input, and rule order never changes the output', () => {
    fc.assert(
      fc.property(compilableWithObjects, ([d, hubObject, spokeObject]) => {
        const forward = compileDerived(d);
        const reversed = compileDerived(d, [...d.rules].reverse());
        if (!forward.ok || !reversed.ok) throw new Error('expected both orders to compile');
        for (const [input, from, to] of [
          [hubObject, 'v2', 'v1'],
          [spokeObject, 'v1', 'v2'],
        ] as const) {
          const before = structuredClone(input);
          const a = convert(forward.router, input, from, to);
          expect(input).toEqual(before);
          expect(convert(reversed.router, input, from, to)).toEqual(a);
        }
      }),
    );
  });

  it('converting an input given away (convertOwned) gives what converting a copy gives', () => {
    fc.assert(
      fc.property(compilableWithObjects, ([d, hubObject, spokeObject]) => {
        const compiled = compileDerived(d);
        if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
        for (const [input, from, to] of [
          [hubObject, 'v2', 'v1'],
          [spokeObject, 'v1', 'v2'],
          [hubObject, 'v2', 'v2'],
        ] as const) {
          const expected = convert(compiled.router, input, from, to);
          const owned = convertOwned(compiled.router, structuredClone(input), from, to);
          expect(structuredClone(owned)).toEqual(structuredClone(expected));
        }
      }),
    );
  });
});
