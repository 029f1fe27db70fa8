import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from '../engine/compile.ts';
import type { Router } from '../engine/plan.ts';
import { enumOf, GROUP, int, obj, object, root, spec, str, versions } from '../engine/test-support.ts';
import type { PlanLookup } from './plans.ts';
import {
  answerConversionReview,
  CONVERSION_REVIEW_V1,
  CONVERSION_REVIEW_V1BETA1,
  type ConversionReview,
  type ConversionReviewOut,
  conversionReviewSchema,
  DEFAULT_REVIEW_LIMITS,
  isConversionReview,
  parseConversionReview,
  type ReviewLimits,
  valueNesting,
} from './review.ts';

const TARGET = `widgets.${GROUP}`;

// v2 is the hub (storage); v1 is the spoke the ten rules below describe.
const hub = root(
  {
    storageGB: str(),
    size: enumOf('Small', 'Medium', 'Large'),
    tier: enumOf('Gold', 'Silver'),
    disk: obj({ class: str(), iops: int() }),
    replicas: int(),
    owner: str(),
  },
  { phase: str(), message: str() },
);
const spoke = root(
  {
    storageSize: str(),
    size: enumOf('S', 'M', 'L'),
    tier: enumOf('gold', 'silver'),
    diskClass: str(),
    diskIops: int(),
    legacy: str(),
    schemaVersion: str(),
    computeUnits: int(),
    owner: str(),
  },
  { phase: str(), detail: str() },
);
const rename = (hubPath: string, spokePath: string) => ({
  strategy: 'FieldRename',
  fieldRename: { hubPath, spokePath },
});
const remap = (path: string, pairs: [string, string][]) => ({
  strategy: 'EnumRemap',
  enumRemap: { path, mapping: pairs.map(([h, s]) => ({ hub: h, spoke: s })) },
});
const TEN_RULES = [
  rename('spec.storageGB', 'spec.storageSize'),
  remap('spec.size', [
    ['Small', 'S'],
    ['Medium', 'M'],
    ['Large', 'L'],
  ]),
  rename('spec.disk.class', 'spec.diskClass'),
  rename('spec.disk.iops', 'spec.diskIops'),
  {
    strategy: 'DefaultValue',
    defaultValue: { path: 'spec.replicas', existsOn: 'Hub', default: 1 },
    acknowledgeLossy: true,
  },
  { strategy: 'Delete', delete: { path: 'spec.legacy', existsOn: 'Spoke' }, acknowledgeLossy: true },
  {
    strategy: 'Constant',
    constant: { path: 'spec.schemaVersion', existsOn: 'Spoke', value: 'v1' },
    acknowledgeLossy: true,
  },
  remap('spec.tier', [
    ['Gold', 'gold'],
    ['Silver', 'silver'],
  ]),
  {
    strategy: 'DefaultValue',
    defaultValue: { path: 'spec.computeUnits', existsOn: 'Spoke', default: 2 },
    acknowledgeLossy: true,
  },
  rename('status.message', 'status.detail'),
];

function compiledRouter(): Router {
  const result = compile(spec('v2', { v1: TEN_RULES }), versions({ v2: hub, v1: spoke }));
  if (!result.ok) throw new Error(`the test plan must compile: ${JSON.stringify(result.diagnostics)}`);
  return result.router;
}
const router = compiledRouter();
const PLAN: PlanLookup = { kind: 'plan', router, group: GROUP };

const hubWidget = (name = 'w1', specOverride: Record<string, unknown> = {}) => ({
  ...object(
    'v2',
    {
      storageGB: '500',
      size: 'Large',
      tier: 'Gold',
      disk: { class: 'ssd', iops: 3000 },
      replicas: 5,
      owner: 'me',
      ...specOverride,
    },
    { status: { phase: 'Ready', message: 'ok' } },
  ),
  metadata: { name, namespace: 'team-a', labels: { app: 'w' } },
});
const hubWidgetAsSpoke = (name = 'w1') => ({
  ...object(
    'v1',
    {
      storageSize: '500',
      size: 'L',
      tier: 'gold',
      diskClass: 'ssd',
      diskIops: 3000,
      owner: 'me',
      schemaVersion: 'v1',
      computeUnits: 2,
    },
    { status: { phase: 'Ready', detail: 'ok' } },
  ),
  metadata: { name, namespace: 'team-a', labels: { app: 'w' } },
});
const spokeWidget = (name = 'w2') => ({
  ...object(
    'v1',
    {
      storageSize: '64',
      size: 'S',
      tier: 'silver',
      diskClass: 'hdd',
      diskIops: 100,
      legacy: 'x',
      schemaVersion: 'v1',
      computeUnits: 7,
      owner: 'you',
    },
    { status: { phase: 'Pending', detail: 'wait' } },
  ),
  metadata: { name, namespace: 'team-b' },
});
const spokeWidgetAsHub = (name = 'w2') => ({
  ...object(
    'v2',
    {
      storageGB: '64',
      size: 'Small',
      tier: 'Silver',
      disk: { class: 'hdd', iops: 100 },
      replicas: 1,
      owner: 'you',
    },
    { status: { phase: 'Pending', message: 'wait' } },
  ),
  metadata: { name, namespace: 'team-b' },
});

interface BodyOptions {
  apiVersion?: string;
  uid?: string;
  desired?: string;
}

function reviewValue(objects: unknown[], o: BodyOptions = {}) {
  return {
    apiVersion: o.apiVersion ?? CONVERSION_REVIEW_V1,
    kind: 'ConversionReview',
    request: { uid: o.uid ?? 'uid-1', desiredAPIVersion: o.desired ?? `${GROUP}/v1`, objects },
  };
}
const body = (objects: unknown[], o: BodyOptions = {}) => JSON.stringify(reviewValue(objects, o));

function parsed(text: string | Buffer, limits?: ReviewLimits): ConversionReview {
  const result = parseConversionReview(text, limits);
  if (!result.ok) throw new Error(`expected a readable review: ${result.error.message}`);
  return result.value;
}

/** What the server would send: the parsed review's answer, a Failure for a readable uid, or a 400. */
type Outcome = { http: 400; message: string } | { review: ConversionReviewOut; parsed?: ConversionReview };

function serve(text: string | Buffer, plan: PlanLookup = PLAN, limits?: ReviewLimits): Outcome {
  const result = parseConversionReview(text, limits);
  if (result.ok) return { review: answerConversionReview(result.value, TARGET, plan), parsed: result.value };
  if (result.error.uid === undefined) return { http: result.error.status, message: result.error.message };
  return { review: result.error.answer };
}

function failureMessage(out: ConversionReviewOut): string {
  const { response } = out;
  if (response.result.status !== 'Failure')
    throw new Error(`expected a Failure, got ${JSON.stringify(out).slice(0, 500)}`);
  expect(response, 'a Failure must not carry converted objects').not.toHaveProperty('convertedObjects');
  return response.result.message;
}

function answered(outcome: Outcome): ConversionReviewOut {
  if ('http' in outcome) throw new Error(`expected a review, got HTTP 400: ${outcome.message}`);
  return outcome.review;
}

describe('answering a ConversionReview with a compiled plan', () => {
  it('converts hub → spoke in a v1 review, echoing the uid and apiVersion', () => {
    const out = answerConversionReview(
      parsed(body([hubWidget('a'), hubWidget('b')], { uid: 'f3c1' })),
      TARGET,
      PLAN,
    );
    expect(out).toEqual({
      apiVersion: CONVERSION_REVIEW_V1,
      kind: 'ConversionReview',
      response: {
        uid: 'f3c1',
        result: { status: 'Success' },
        convertedObjects: [hubWidgetAsSpoke('a'), hubWidgetAsSpoke('b')],
      },
    });
  });

  it('converts spoke → hub in a v1beta1 review (a Buffer body), answering in v1beta1', () => {
    const text = Buffer.from(
      body([spokeWidget()], { apiVersion: CONVERSION_REVIEW_V1BETA1, uid: 'beta-9', desired: `${GROUP}/v2` }),
    );
    expect(answerConversionReview(parsed(text), TARGET, PLAN)).toEqual({
      apiVersion: CONVERSION_REVIEW_V1BETA1,
      kind: 'ConversionReview',
      response: { uid: 'beta-9', result: { status: 'Success' }, convertedObjects: [spokeWidgetAsHub()] },
    });
  });

  it('converts a list of objects stored at different versions, in order', () => {
    const review = parsed(
      body([spokeWidget('x'), hubWidget('y'), spokeWidget('z')], { desired: `${GROUP}/v2` }),
    );
    const out = answerConversionReview(review, TARGET, PLAN);
    expect(out.response).toEqual({
      uid: 'uid-1',
      result: { status: 'Success' },
      convertedObjects: [spokeWidgetAsHub('x'), hubWidget('y'), spokeWidgetAsHub('z')],
    });
  });

  it('round-trips spoke → hub → spoke to the same object, apart from the field only the spoke holds', () => {
    const up = answerConversionReview(
      parsed(body([spokeWidget()], { desired: `${GROUP}/v2` })),
      TARGET,
      PLAN,
    );
    if (up.response.result.status !== 'Success' || !('convertedObjects' in up.response))
      throw new Error(failureMessage(up));
    const down = answerConversionReview(parsed(body(up.response.convertedObjects)), TARGET, PLAN);
    const { legacy: _dropped, ...kept } = spokeWidget().spec;
    expect(down.response).toMatchObject({
      result: { status: 'Success' },
      convertedObjects: [{ ...spokeWidget(), spec: { ...kept, computeUnits: 2 } }],
    });
  });

  it('answers an empty list with Success and no objects', () => {
    expect(answerConversionReview(parsed(body([])), TARGET, PLAN).response).toEqual({
      uid: 'uid-1',
      result: { status: 'Success' },
      convertedObjects: [],
    });
  });

  it('does not modify the review it answers', () => {
    const review = parsed(body([hubWidget('a'), spokeWidget('b')], { desired: `${GROUP}/v2` }));
    const before = structuredClone(review);
    answerConversionReview(review, TARGET, PLAN);
    expect(review).toEqual(before);
  });
});

describe('a review fails as a whole, with a message the user reads in kubectl', () => {
  it('fails when one object of three cannot be converted, naming it, the versions and the reason', () => {
    const bad = hubWidget('w-bad', { tier: 'Platinum' });
    const out = answerConversionReview(parsed(body([hubWidget('a'), bad, hubWidget('c')])), TARGET, PLAN);
    expect(out.response.uid).toBe('uid-1');
    expect(failureMessage(out)).toBe(
      'converting Widget team-a/w-bad from v2 to v1: spec.tier: value "Platinum" has no mapping in rule 7 (EnumRemap)',
    );
  });

  it('names the first failure and counts the others', () => {
    const objects = [hubWidget('ok'), hubWidget('b1', { size: 'Huge' }), hubWidget('b2', { size: 'Tiny' })];
    expect(failureMessage(answerConversionReview(parsed(body(objects)), TARGET, PLAN))).toBe(
      'converting Widget team-a/b1 from v2 to v1: spec.size: value "Huge" has no mapping in rule 1 (EnumRemap) (and 1 more of the 3 objects failed to convert)',
    );
  });

  it('fails closed when the replica holds no plan for the target, saying why', () => {
    const none: PlanLookup = { kind: 'none', why: 'its CRDConversionConfig "widgets" does not compile yet' };
    const out = answerConversionReview(parsed(body([hubWidget()], { uid: 'u-5' })), TARGET, none);
    expect(out.response.uid).toBe('u-5');
    expect(failureMessage(out)).toBe(
      `this replica holds no conversion plan for ${TARGET}: its CRDConversionConfig "widgets" does not compile yet`,
    );
  });

  it('fails an object of another group, sent to this target’s path, naming it', () => {
    const stray = { ...hubWidget('g1'), apiVersion: 'other.io/v2', kind: 'Gadget' };
    expect(failureMessage(answerConversionReview(parsed(body([hubWidget(), stray])), TARGET, PLAN))).toBe(
      `converting Gadget team-a/g1 from other.io/v2 to v1: other.io is not the group /convert/${TARGET} converts (${GROUP})`,
    );
  });

  it('fails a desiredAPIVersion of another group before converting anything', () => {
    const out = answerConversionReview(parsed(body([hubWidget()], { desired: 'other.io/v1' })), TARGET, PLAN);
    expect(failureMessage(out)).toBe(
      `desiredAPIVersion other.io/v1 is not a version of ${GROUP}, the group /convert/${TARGET} converts`,
    );
  });

  it.each([
    [
      'a version the plan does not convert',
      { desired: `${GROUP}/v9` },
      [hubWidget()],
      /no conversion plan for version v9; this config converts v2 \(hub\), v1/,
    ],
    [
      'a desiredAPIVersion without a group',
      { desired: 'v1' },
      [hubWidget()],
      /^desiredAPIVersion v1 is not a version of example.org/,
    ],
    [
      'an object that is not an object',
      {},
      [hubWidget(), ['x']],
      /^converting objects\[1\] to v1: it is not a JSON object$/,
    ],
    [
      'an object without apiVersion',
      {},
      [{ kind: 'Widget', metadata: { name: 'n' } }],
      /^converting Widget n to v1: apiVersion is missing or not a string$/,
    ],
    [
      'an object whose apiVersion has no version',
      {},
      [{ ...hubWidget(), apiVersion: `${GROUP}/` }],
      /apiVersion example.org\/ is not <group>\/<version>$/,
    ],
  ])('fails on %s', (_, options, objects, message) => {
    expect(failureMessage(answerConversionReview(parsed(body(objects, options)), TARGET, PLAN))).toMatch(
      message,
    );
  });

  it('converts an object nested deeper than any recursion could follow, by sharing its values, not copying them', () => {
    // Built without JSON, so no depth check stands between it and the engine.
    let deep: unknown = 'bottom';
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    const review: ConversionReview = {
      apiVersion: CONVERSION_REVIEW_V1,
      kind: 'ConversionReview',
      request: {
        uid: 'deep-1',
        desiredAPIVersion: `${GROUP}/v1`,
        objects: [hubWidget('abyss', { extra: deep })],
      },
    };
    const out = answerConversionReview(review, TARGET, PLAN);
    expect(out.response.uid).toBe('deep-1');
    expect(out.response.result.status).toBe('Success');
    const [converted] = 'convertedObjects' in out.response ? out.response.convertedObjects : [];
    expect((converted as { spec: { extra: unknown } }).spec.extra).toBe(deep);
  });

  it('turns an error thrown inside the engine into a Failure, never a throw', () => {
    const broken = {
      hubVersion: 'v2',
      spokes: {
        get() {
          throw new Error('boom');
        },
      },
      unlisted: new Set(),
    } as unknown as Router;
    const out = answerConversionReview(parsed(body([hubWidget()])), TARGET, {
      kind: 'plan',
      router: broken,
      group: GROUP,
    });
    expect(failureMessage(out)).toBe(
      'converting Widget team-a/w1 from v2 to v1: the conversion failed unexpectedly (Error: boom)',
    );
  });
});

describe('parseConversionReview', () => {
  it('reads the request of a v1 review', () => {
    expect(parseConversionReview(body([hubWidget()], { uid: 'u1' }))).toEqual({
      ok: true,
      value: {
        apiVersion: CONVERSION_REVIEW_V1,
        kind: 'ConversionReview',
        request: { uid: 'u1', desiredAPIVersion: `${GROUP}/v1`, objects: [hubWidget()] },
      },
    });
  });

  it.each([
    ['a body that is not JSON', '{"apiVersion":', /^request body is not JSON: SyntaxError/],
    ['an empty body', '', /^request body is not JSON/],
    [
      'a JSON string',
      '"ConversionReview"',
      /^not an apiextensions.k8s.io\/v1 \(or v1beta1\) ConversionReview request/,
    ],
    ['null', 'null', /^not an apiextensions/],
    ['an array', '[{"request":{"uid":"u"}}]', /^not an apiextensions/],
    [
      'a review without a uid',
      JSON.stringify({ ...reviewValue([]), request: { desiredAPIVersion: 'a/b', objects: [] } }),
      /request.uid/,
    ],
    ['an empty uid', body([], { uid: '' }), /request.uid/],
    [
      'a uid that is not a string',
      JSON.stringify({ ...reviewValue([]), request: { uid: 7, desiredAPIVersion: 'a/b', objects: [] } }),
      /request.uid/,
    ],
    [
      'a body nested too deep with no uid',
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      /nests more than 1000 levels deep/,
    ],
  ])('answers %s with a 400 (no uid to answer)', (_, text, message) => {
    const result = parseConversionReview(text);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error).toMatchObject({ uid: undefined, status: 400 });
      expect(result.error.message).toMatch(message);
    }
  });

  const valid = reviewValue([hubWidget()], { uid: 'u-7' });
  it.each([
    [
      'a review of an unknown apiVersion (answered in v1)',
      { ...valid, apiVersion: 'apiextensions.k8s.io/v2' },
      CONVERSION_REVIEW_V1,
      /apiVersion/,
    ],
    ['the wrong kind', { ...valid, kind: 'AdmissionReview' }, CONVERSION_REVIEW_V1, /kind/],
    [
      'no desiredAPIVersion (v1beta1)',
      { ...valid, apiVersion: CONVERSION_REVIEW_V1BETA1, request: { uid: 'u-7', objects: [] } },
      CONVERSION_REVIEW_V1BETA1,
      /request.desiredAPIVersion/,
    ],
    [
      'objects that are not an array',
      { ...valid, request: { ...valid.request, objects: { a: 1 } } },
      CONVERSION_REVIEW_V1,
      /request.objects/,
    ],
    [
      'no objects',
      { ...valid, request: { uid: 'u-7', desiredAPIVersion: 'a/v1' } },
      CONVERSION_REVIEW_V1,
      /request.objects/,
    ],
  ])('answers %s with a Failure for the readable uid', (_, value, apiVersion, message) => {
    const result = parseConversionReview(JSON.stringify(value));
    if (result.ok || result.error.uid === undefined) throw new Error('expected a Failure for uid u-7');
    expect(result.error.uid).toBe('u-7');
    expect(result.error.answer.apiVersion).toBe(apiVersion);
    expect(result.error.answer.response.uid).toBe('u-7');
    expect(failureMessage(result.error.answer)).toMatch(message);
  });

  it('answers a review nested deeper than the limit with a Failure for its uid, at 100k levels without a crash', () => {
    const depth = 100_000;
    const text = body([hubWidget('d', { extra: 0 })], { uid: 'deep' }).replace(
      '"extra":0',
      `"extra":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`,
    );
    const result = parseConversionReview(text);
    if (result.ok || result.error.uid === undefined) throw new Error('expected a Failure for uid deep');
    const { answer } = result.error;
    expect(failureMessage(answer)).toBe(
      'the ConversionReview nests more than 1000 levels deep, the most this server converts',
    );
    expect(() => JSON.stringify(answer)).not.toThrow();
  });

  it('accepts nesting up to the limit and refuses one level more', () => {
    const limits = { ...DEFAULT_REVIEW_LIMITS, maxDepth: 40 };
    // review, request, objects, object, spec, then the value: 5 + n levels.
    const nested = (n: number) =>
      body([hubWidget('d', { extra: 0 })]).replace('"extra":0', `"extra":${'['.repeat(n)}${']'.repeat(n)}`);
    expect(valueNesting(JSON.parse(nested(35)), 40)).toBe(40);
    expect(valueNesting(JSON.parse(nested(36)), 40)).toBe(41);
    expect(parseConversionReview(nested(35), limits).ok).toBe(true);
    expect(parseConversionReview(nested(36), limits)).toMatchObject({ ok: false, error: { uid: 'uid-1' } });
  });

  it('refuses more objects than the limit with a Failure for the uid, and accepts exactly the limit', () => {
    const limits = { ...DEFAULT_REVIEW_LIMITS, maxObjects: 3 };
    expect(parseConversionReview(body([{}, {}, {}]), limits).ok).toBe(true);
    const result = parseConversionReview(body([{}, {}, {}, {}]), limits);
    if (result.ok || result.error.uid === undefined) throw new Error('expected a Failure for uid-1');
    expect(failureMessage(result.error.answer)).toBe(
      'the ConversionReview carries 4 objects, more than the 3 this server converts in one review',
    );
  });

  it('refuses a review of 100 001 objects under the default limits', () => {
    const text = body(new Array(DEFAULT_REVIEW_LIMITS.maxObjects + 1).fill(0));
    expect(parseConversionReview(text)).toMatchObject({ ok: false, error: { uid: 'uid-1' } });
  });
});

describe('valueNesting', () => {
  it.each([
    ['1', 0],
    ['{}', 1],
    ['[[],[[]]]', 3],
    ['{"a":"[[[{{{"}', 1],
    ['["\\"[[[", ["\\\\"], "]]]]]]"]', 2],
    ['{"a":[{"b":[]}], "c":{}}', 4],
  ])('%s nests %i deep (brackets in strings do not count)', (text, depth) => {
    expect(valueNesting(JSON.parse(text), 1000)).toBe(depth);
  });

  it('agrees with the recursive depth of any JSON value, keys and strings of brackets and quotes included', () => {
    const depthOf = (value: unknown): number =>
      typeof value !== 'object' || value === null
        ? 0
        : 1 + Math.max(0, ...Object.values(value as object).map(depthOf));
    const tricky = fc.stringMatching(/^[[\]{}"\\a]*$/);
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        tricky,
        fc.jsonValue(),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(tricky, tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (v) => {
        expect(valueNesting(JSON.parse(JSON.stringify(v)), 1000)).toBe(depthOf(v));
      }),
      { numRuns: 2000 },
    );
  });
});

// --- properties: whatever arrives, the server gets an answer it can send

const VERSIONS = [CONVERSION_REVIEW_V1, CONVERSION_REVIEW_V1BETA1];

function readableUid(text: string | Buffer): string | undefined {
  try {
    const uid = JSON.parse(text.toString())?.request?.uid;
    return typeof uid === 'string' && uid !== '' ? uid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The contract the server relies on: a 400 with a message exactly when no uid can be read;
 * otherwise a review in a version it can answer in, for that uid, that serializes; Success only
 * with every object converted, in order, to the desired version.
 */
function assertWellFormed(text: string | Buffer, outcome: Outcome): void {
  const uid = readableUid(text);
  if ('http' in outcome) {
    expect(outcome.http).toBe(400);
    expect(outcome.message.length).toBeGreaterThan(0);
    expect(uid, 'a readable uid must be answered with a review, not a 400').toBeUndefined();
    return;
  }
  const { review, parsed } = outcome;
  expect(review.kind).toBe('ConversionReview');
  expect(VERSIONS).toContain(review.apiVersion);
  expect(review.response.uid).toBe(uid);
  expect(() => JSON.stringify(review)).not.toThrow();
  if (parsed) expect(review.apiVersion).toBe(parsed.apiVersion);
  const { response } = review;
  if (response.result.status === 'Success') {
    if (!parsed || !('convertedObjects' in response)) throw new Error('Success without a parsed review');
    const { objects, desiredAPIVersion } = parsed.request;
    expect(response.convertedObjects).toHaveLength(objects.length);
    for (const converted of response.convertedObjects)
      expect((converted as { apiVersion: unknown }).apiVersion).toBe(desiredAPIVersion);
  } else {
    expect(response.result.status).toBe('Failure');
    expect(typeof response.result.message).toBe('string');
    expect(response.result.message.length).toBeGreaterThan(0);
  }
}

function check(text: string | Buffer, plan: PlanLookup = PLAN, limits?: ReviewLimits): Outcome {
  let outcome: Outcome | undefined;
  expect(() => {
    outcome = serve(text, plan, limits);
  }).not.toThrow();
  assertWellFormed(text, outcome as Outcome);
  return outcome as Outcome;
}

const convertible = fc.constantFrom<unknown>(
  hubWidget('h'),
  spokeWidget('s'),
  object('v1', {}),
  object('v2', {}, { metadata: null }),
);
const unconvertible = fc.constantFrom<unknown>(hubWidget('bad', { tier: 'Bronze' }), {
  ...hubWidget('o'),
  apiVersion: 'other.io/v2',
});
const anyObject = fc.oneof(
  { weight: 30, arbitrary: convertible },
  { weight: 1, arbitrary: unconvertible },
  { weight: 1, arbitrary: fc.jsonValue() },
);
const field = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: fc.jsonValue() });

/** Reviews close to valid: each field valid most of the time, sometimes any JSON, sometimes absent. */
const nearlyValidReview = fc.record(
  {
    apiVersion: field(fc.constantFrom(...VERSIONS)),
    kind: field(fc.constant('ConversionReview')),
    request: field(
      fc.record(
        {
          uid: field(fc.oneof(fc.uuid(), fc.string())),
          desiredAPIVersion: field(
            fc.oneof(
              { weight: 8, arbitrary: fc.constantFrom(`${GROUP}/v1`, `${GROUP}/v2`) },
              { weight: 1, arbitrary: fc.constantFrom(`${GROUP}/v9`, 'other.io/v1') },
            ),
          ),
          objects: field(fc.array(anyObject, { maxLength: 8 })),
          extra: fc.jsonValue(),
        },
        { requiredKeys: ['uid', 'desiredAPIVersion', 'objects'] },
      ),
    ),
  },
  { requiredKeys: ['apiVersion', 'kind', 'request'] },
);

/**
 * The oracle for "Success only when every object converts", from the module's own answers to
 * smaller reviews: the same review with no objects (the review-level checks: plan, desired group),
 * and with each object alone.
 */
function succeedsWith(review: ConversionReview, objects: unknown[]): boolean {
  const smaller = { ...review, request: { ...review.request, objects } };
  return answerConversionReview(smaller, TARGET, PLAN).response.result.status === 'Success';
}

describe('the hand-written review check', () => {
  it('accepts exactly what the zod schema accepts', () => {
    const anything = fc.oneof(
      { weight: 6, arbitrary: nearlyValidReview },
      { weight: 1, arbitrary: fc.jsonValue() },
      {
        weight: 1,
        arbitrary: nearlyValidReview.map((r) => ({ ...r, request: { ...(r.request as object), uid: '' } })),
      },
    );
    fc.assert(
      fc.property(anything, (value) => {
        expect(isConversionReview(value)).toBe(conversionReviewSchema.safeParse(value).success);
      }),
      { numRuns: 3000 },
    );
  });
});

describe('properties: any body gets an answer the server can send, never a throw', () => {
  it('arbitrary JSON values as the body', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        check(JSON.stringify(value) ?? 'null');
      }),
      { numRuns: 1000 },
    );
  });

  it('arbitrary strings and bytes as the body, JSON punctuation over-represented', () => {
    const jsonish = fc.string({
      unit: fc.constantFrom('{', '}', '[', ']', '"', '\\', ':', ',', 'u', '1', ' ', '"uid"', '"request"'),
      maxLength: 200,
    });
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), jsonish), (text) => {
        check(text);
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        check(Buffer.from(bytes));
      }),
      { numRuns: 300 },
    );
  });

  it('mutated valid reviews: uid echoed, Success exactly when each object converts on its own', () => {
    fc.assert(
      fc.property(nearlyValidReview, (value) => {
        const text = JSON.stringify(value);
        const outcome = check(text);
        if ('http' in outcome || !outcome.parsed) return;
        const { parsed, review } = outcome;
        const expected =
          succeedsWith(parsed, []) && parsed.request.objects.every((o) => succeedsWith(parsed, [o]));
        expect(review.response.result.status === 'Success').toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });

  it('deep nesting up to 100k levels, built as text: refused past the limit, converted within it', () => {
    const shape = fc.record({
      levels: fc.oneof(fc.integer({ min: 0, max: 1_200 }), fc.integer({ min: 0, max: 100_000 })),
      open: fc.constantFrom('[', '{"k":'),
      decoy: fc.constantFrom('', '"[[[{{{"', '"\\"]]]}}}"'),
      withUid: fc.boolean(),
    });
    fc.assert(
      fc.property(shape, ({ levels, open, decoy, withUid }) => {
        const close = open === '[' ? ']' : '}';
        const value = `${open.repeat(levels)}${decoy || '0'}${close.repeat(levels)}`;
        const base = body([hubWidget('d', { extra: 0 })], withUid ? {} : { uid: '' });
        const text = base.replace('"extra":0', `"extra":${value}`);
        // review, request, objects, object, spec: 5 levels above the value; metadata.labels is 6.
        const depth = Math.max(6, 5 + levels);
        expect(valueNesting(JSON.parse(text), 1000)).toBe(Math.min(depth, 1001));
        const outcome = check(text);
        const tooDeep = depth > DEFAULT_REVIEW_LIMITS.maxDepth;
        if (!withUid) expect('http' in outcome).toBe(true);
        else if (tooDeep)
          expect(failureMessage(answered(outcome))).toMatch(/nests more than 1000 levels deep/);
        else expect(answered(outcome).response.result.status).toBe('Success');
      }),
      { numRuns: 60 },
    );
  });

  it('huge object arrays: all converted in order, or refused past the count limit', () => {
    const limits = { ...DEFAULT_REVIEW_LIMITS, maxObjects: 2_500 };
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 5_000 }),
        fc.constantFrom(`${GROUP}/v1`, `${GROUP}/v2`),
        (count, desired) => {
          const objects = Array.from({ length: count }, (_, i) =>
            i % 2 ? hubWidget(`h${i}`) : spokeWidget(`s${i}`),
          );
          const outcome = check(body(objects, { desired }), PLAN, limits);
          const review = answered(outcome);
          if (count > limits.maxObjects) {
            expect(failureMessage(review)).toMatch(/more than the 2500 this server converts/);
            return;
          }
          const { response } = review;
          if (!('convertedObjects' in response)) throw new Error(failureMessage(review));
          const names = response.convertedObjects.map(
            (o) => (o as { metadata: { name: string } }).metadata.name,
          );
          expect(names).toEqual(objects.map((o) => o.metadata.name));
        },
      ),
      { numRuns: 20 },
    );
  });
});
