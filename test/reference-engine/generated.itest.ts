// Property-generated objects through both engines, per strategy. Each strategy's worked example
// (src/engine/strategy-reference/examples.ts, the one docs/strategies.md shows) is compiled by
// Switchyard and by the reference engine, and objects generated from the example's schemas are
// converted by both, in both directions: random values, absent fields, nulls, values of the wrong
// type, empty and large arrays and maps, strings shaped like what the strategies parse (quantities,
// durations, lists). They must agree: the same object, or both refusing, except where
// deliberate-differences.ts names the difference. On Switchyard alone, schema-valid objects come
// back from a round trip wherever its plan says that direction is lossless.
//
// The generator is seeded (SEED below, or SWITCHYARD_GENERATED_SEED) so a failure reproduces; the
// number of objects per example and direction is GENERATED_OBJECTS (default 200).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compile } from '../../src/engine/compile.ts';
import { convertOwned } from '../../src/engine/convert.ts';
import { equalUpToEmptyContainers, isJsonObject } from '../../src/engine/json.ts';
import type { Router } from '../../src/engine/plan.ts';
import type { TargetSchema } from '../../src/engine/schema.ts';
import { STRATEGY_EXAMPLES, type StrategyExample } from '../../src/engine/strategy-reference/examples.ts';
import { exampleSpec, exampleVersions } from '../../src/engine/strategy-reference/render.ts';
import { DELIBERATE_DIFFERENCES, type Outcome } from './deliberate-differences.ts';
import { ReferenceEngine } from './reference-engine.ts';

const SEED = Number(process.env.SWITCHYARD_GENERATED_SEED ?? 20261207);
const OBJECTS = Number(process.env.GENERATED_OBJECTS ?? 200);
const HUB = 'v2';
const SPOKE = 'v1';

/** Strings shaped like what the strategies parse, beside arbitrary ones. */
const SHAPED_STRINGS = [
  '',
  ' ',
  '0',
  '1',
  '-1',
  '1.5',
  '1e3',
  'true',
  'false',
  '500m',
  '1Gi',
  '2k',
  '1.5Gi',
  '0.001',
  '1h30m',
  '90s',
  '1.5h',
  '-2m',
  'a,b,c',
  'a,,b',
  ',',
  '10Gi-ssd',
  'x-y-z',
  '{"a":1}',
  'null',
  'é',
  '🙂',
];

function stringValue(): fc.Arbitrary<string> {
  return fc.oneof(fc.constantFrom(...SHAPED_STRINGS), fc.string({ maxLength: 12 }));
}

function numberValue(integer: boolean): fc.Arbitrary<number> {
  const special = fc.constantFrom(0, 1, -1, 2, 1000, 1024, 2 ** 31, 2 ** 53 - 1, 1.5, -0.25, 1e-9, 3.0);
  const random = integer
    ? fc.integer({ min: -1_000_000, max: 1_000_000 })
    : fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 });
  return fc.oneof(special, random);
}

/** A value the schema accepts. */
function validValue(schema: TargetSchema, depth = 0): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema['x-kubernetes-int-or-string']) return fc.oneof(stringValue(), numberValue(true));
  if (schema.properties && Object.keys(schema.properties).length > 0) {
    const fields = Object.fromEntries(
      Object.entries(schema.properties).map(([name, child]) => [name, validValue(child, depth + 1)]),
    );
    return fc.record(fields, { requiredKeys: [] });
  }
  switch (schema.type) {
    case 'string':
      return stringValue();
    case 'integer':
      return numberValue(true);
    case 'number':
      return numberValue(false);
    case 'boolean':
      return fc.boolean();
    case 'array': {
      const items = validValue(schema.items ?? {}, depth + 1);
      const maxLength = schema.maxItems ?? (depth === 0 ? 40 : 6);
      return fc.oneof(
        { weight: 4, arbitrary: fc.array(items, { maxLength: Math.min(maxLength, 4) }) },
        { weight: 1, arbitrary: fc.array(items, { maxLength }) },
      );
    }
    case 'object': {
      const values = schema.additionalProperties;
      if (values === undefined || values === false) return fc.constant({});
      const value = values === true ? fc.jsonValue({ maxDepth: 2 }) : validValue(values, depth + 1);
      return fc.dictionary(fc.oneof(stringValue(), fc.string({ maxLength: 6 })), value, {
        maxKeys: depth === 0 ? 30 : 5,
      });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** A value that may break the schema anywhere: null, or a value of another type, in place of any field. */
function anyValue(schema: TargetSchema, depth = 0): fc.Arbitrary<unknown> {
  const wrong = fc.oneof(fc.constant(null), fc.jsonValue({ maxDepth: 1 }), stringValue(), numberValue(false));
  if (schema.properties && Object.keys(schema.properties).length > 0) {
    const fields = Object.fromEntries(
      Object.entries(schema.properties).map(([name, child]) => [name, anyValue(child, depth + 1)]),
    );
    return fc.oneof(
      { weight: 8, arbitrary: fc.record(fields, { requiredKeys: [] }) },
      { weight: 1, arbitrary: wrong },
    );
  }
  if (schema.type === 'array' && depth < 3) {
    const items = anyValue(schema.items ?? {}, depth + 1);
    return fc.oneof(
      { weight: 6, arbitrary: fc.array(items, { maxLength: 5 }) },
      { weight: 1, arbitrary: wrong },
    );
  }
  return fc.oneof({ weight: 5, arbitrary: validValue(schema, depth) }, { weight: 1, arbitrary: wrong });
}

const annotations = fc.dictionary(
  fc.constantFrom('example.org/stash', 'example.org/other', 'app'),
  fc.oneof(stringValue(), fc.constantFrom('"quoted"', '{"a":[1,2]}', '3', 'not json')),
  { maxKeys: 2 },
);

function objects(example: StrategyExample, version: string, valid: boolean): Record<string, unknown>[] {
  const fields = version === HUB ? example.hub : example.spoke;
  const spec: TargetSchema = { type: 'object', properties: fields };
  const object = fc.record(
    {
      spec: valid ? validValue(spec) : anyValue(spec),
      annotations: valid ? fc.constant(undefined) : fc.option(annotations, { nil: undefined }),
      labels: fc.option(
        fc.dictionary(fc.constantFrom('example.org/stash', 'tier'), stringValue(), { maxKeys: 2 }),
        {
          nil: undefined,
        },
      ),
    },
    { requiredKeys: ['spec'] },
  );
  return fc.sample(object, { seed: SEED + version.length + (valid ? 1 : 0), numRuns: OBJECTS }).map((o) => {
    const metadata: Record<string, unknown> = { name: 'generated' };
    if (o.annotations) metadata.annotations = o.annotations;
    if (o.labels) metadata.labels = o.labels;
    return { apiVersion: `example.org/${version}`, kind: 'Widget', metadata, spec: o.spec };
  });
}

/** The config as a user writes it, for the reference's harness (its API shape). */
function apiSpec(example: StrategyExample) {
  return {
    targetCRD: { name: 'widgets.example.org' },
    hubVersion: HUB,
    spokes: [{ version: SPOKE, rules: example.rules }],
  };
}

function switchyardConvert(router: Router, object: unknown, from: string, to: string): Outcome {
  const result = convertOwned(router, JSON.parse(JSON.stringify(object)), from, to);
  return result.ok
    ? { ok: true, object: JSON.parse(JSON.stringify(result.object)) }
    : { ok: false, error: result.error.message };
}

interface Difference {
  strategy: string;
  from: string;
  object: unknown;
  reference: Outcome;
  switchyard: Outcome;
}

function explained(difference: Difference): boolean {
  const { reference, switchyard } = difference;
  return DELIBERATE_DIFFERENCES.some(
    (d) =>
      d.kind === 'convert' &&
      (typeof d.case === 'string'
        ? d.case === `generated: ${difference.strategy}`
        : d.case.test(`generated: ${difference.strategy}`)) &&
      (d.applies === undefined || d.applies(reference, switchyard, difference.object)),
  );
}

let reference: ReferenceEngine;
const tally: { strategy: string; compared: number; bothRefused: number; roundTrips: number }[] = [];

beforeAll(() => {
  reference = ReferenceEngine.start();
});
afterAll(async () => {
  await reference?.close();
  process.stderr.write(
    `[generated] seed ${SEED}, ${OBJECTS} objects per example and direction\n${tally
      .map(
        (t) =>
          `  ${t.strategy}: ${t.compared} conversions compared, ${t.bothRefused} refused by both, ${t.roundTrips} round trips`,
      )
      .join('\n')}\n`,
  );
});

describe('generated objects convert alike in Switchyard and the reference engine', () => {
  it.each(STRATEGY_EXAMPLES.map((e) => [e.strategy, e] as const))('%s', async (_strategy, example) => {
    const compiled = compile(exampleSpec(example), exampleVersions(example));
    if (!compiled.ok) throw new Error(`Switchyard refuses the ${example.strategy} example`);
    const refCompiled = await reference.compile(apiSpec(example), exampleVersions(example));
    if (!refCompiled.ok)
      throw new Error(
        `the reference refuses the ${example.strategy} example: ${JSON.stringify(refCompiled)}`,
      );
    const router = compiled.router;
    const differences: Difference[] = [];
    const counts = { strategy: example.strategy, compared: 0, bothRefused: 0, roundTrips: 0 };
    try {
      for (const [from, to] of [
        [HUB, SPOKE],
        [SPOKE, HUB],
      ] as const) {
        for (const object of [...objects(example, from, false), ...objects(example, from, true)]) {
          const ref = await reference.convert(refCompiled.handle, object, from, to);
          if ('crash' in ref)
            throw new Error(`the reference crashed on ${JSON.stringify(object)}: ${ref.crash}`);
          const refOutcome: Outcome = ref.ok
            ? { ok: true, object: ref.object }
            : { ok: false, error: ref.error };
          const sy = switchyardConvert(router, object, from, to);
          counts.compared++;
          if (!refOutcome.ok && !sy.ok) counts.bothRefused++;
          const same =
            refOutcome.ok === sy.ok &&
            (!refOutcome.ok ||
              !sy.ok ||
              JSON.stringify(sortKeys(refOutcome.object)) === JSON.stringify(sortKeys(sy.object)));
          const difference = {
            strategy: example.strategy,
            from,
            object,
            reference: refOutcome,
            switchyard: sy,
          };
          if (!same && !explained(difference)) differences.push(difference);
        }
        counts.roundTrips += roundTrips(router, example, from, to);
      }
    } finally {
      await reference.release(refCompiled.handle);
      tally.push(counts);
    }
    for (const d of differences.slice(0, 3))
      process.stderr.write(`[generated] ${example.strategy} difference: ${JSON.stringify(d)}\n`);
    expect(differences.slice(0, 5), `${differences.length} unexplained differences`).toEqual([]);
  });
});

/**
 * Strategies lossless as the reference counts them, for canonical values only (docs/limitations.md):
 * a spelling such as "007" comes back as the value prints, a factor that is not a power of two can
 * leave a rounding error, a key spelled as a rename's target comes back renamed, a stash key the
 * object already carried is overwritten and then removed. For them the check is that one round
 * trip reaches a canonical object, which every further round trip restores.
 */
const CANONICAL_ONLY: ReadonlySet<string> = new Set([
  'TypeCoerce',
  'NumericScale',
  'MapKeyRename',
  'ToAnnotation',
  'ToLabel',
  'FromAnnotation',
  'FromLabel',
]);

/**
 * Schema-valid objects come back from `from` → `to` → `from` wherever that direction is lossless,
 * unless the verdict is the config's own assertion (losslessOverride), which the engine trusts.
 */
function roundTrips(router: Router, example: StrategyExample, from: string, to: string): number {
  const plan = router.spokes.get(SPOKE);
  const lossless = from === HUB ? plan?.lossless.hubToSpoke : plan?.lossless.spokeToHub;
  if (!lossless || JSON.stringify(example.rules).includes('"losslessOverride":true')) return 0;
  const roundTrip = (object: unknown) => {
    const there = switchyardConvert(router, object, from, to);
    return there.ok ? switchyardConvert(router, there.object, to, from) : undefined;
  };
  let count = 0;
  for (const input of objects(example, from, true)) {
    let object: unknown = input;
    if (CANONICAL_ONLY.has(example.strategy)) {
      const canonical = roundTrip(object);
      if (!canonical?.ok) continue;
      object = canonical.object;
    }
    const back = roundTrip(object);
    if (back === undefined) continue; // refused on the way there: nothing to restore
    expect(
      back.ok && equalUpToEmptyContainers(back.object, object),
      `round trip of ${JSON.stringify(object)}`,
    ).toBe(true);
    count++;
  }
  return count;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isJsonObject(value)) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((k) => [k, sortKeys(value[k])]),
  );
}
