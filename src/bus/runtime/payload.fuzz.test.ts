// Fuzz: the payloads of every subject a component reads, as a buggy or hostile publisher could
// send them. Each concern's payload goes through `admitPayload`, the handler runtime's own
// decode (and the router's record decoder), and through `decodeMessage`, the check `dlq retry`
// makes before it re-drives a dead letter. Whatever the bytes: neither throws, the two agree,
// every valid payload (plain or gzip-compressed) is admitted unchanged, every refusal is a
// reason the dead-letter record can carry that names the field at fault, and what a pacer
// admits it can release.
import { gzipSync } from 'node:zlib';
import { headers as natsHeaders } from '@nats-io/transport-node';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { ZodType } from 'zod';
import { FUZZ_TEST_TIMEOUT_MS, fuzz } from '../../../test/support/fuzz.ts';
import { INSPECT_ONLY, workConcerns } from '../../cli/dlq.ts';
import { defaultConfig } from '../../config/schema.ts';
import {
  COMPRESS_ABOVE_BYTES,
  decisionRecordSchema,
  decodeMessage,
  decodeObjectEvent,
  encodeMessage,
  handoverWorkSchema,
  MAX_INFLATED_BYTES,
  objectEventId,
  objectEventSchema,
  workItemSchema,
} from '../messages.ts';
import { pacedItemSchema } from '../pacer/pacer.ts';
import { deadLetterHeaders, readDeadLetter } from './dead-letter.ts';
import { admitPayload } from './payload.ts';

vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS });

const text = (s: string) => new TextEncoder().encode(s);

const nonEmpty = fc.string({ minLength: 1, maxLength: 30, unit: 'grapheme' });
const isoTime = fc
  .date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

const workItem = fc.record({ key: nonEmpty, seq: fc.nat() });
const handoverWork = fc.record(
  {
    key: nonEmpty,
    seq: fc.nat(),
    config: nonEmpty,
    from: nonEmpty,
    to: nonEmpty,
    trust: fc.constant(true as const),
  },
  { requiredKeys: ['key', 'seq'] },
);
const recordedObject = fc.record(
  {
    apiVersion: fc.constantFrom('v1', 'apiextensions.k8s.io/v1', 'switchyard.io/v1alpha1'),
    kind: fc.constantFrom('CustomResourceDefinition', 'Lease', 'CRDConversionConfig'),
    metadata: fc.record(
      { name: nonEmpty, namespace: fc.string(), uid: fc.uuid(), resourceVersion: fc.nat().map(String) },
      { requiredKeys: ['name', 'uid', 'resourceVersion'] },
    ),
    spec: fc.jsonValue({ maxDepth: 3 }),
  },
  { requiredKeys: ['metadata'] },
);
const objectEvent = fc.oneof(
  fc.record(
    {
      op: fc.constant('upsert' as const),
      object: recordedObject,
      observedBy: fc.constantFrom('watch' as const, 'list' as const),
      observedAt: isoTime,
      omitted: fc.record({ reason: fc.constant('too-large' as const), bytes: fc.integer({ min: 1 }) }),
    },
    { requiredKeys: ['op', 'object', 'observedBy', 'observedAt'] },
  ),
  fc.record({
    op: fc.constant('delete' as const),
    object: recordedObject,
    observedBy: fc.constantFrom('watch' as const, 'relist-gap' as const),
    observedAt: isoTime,
  }),
);
const headerName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/);
const pacedItem = fc.record(
  {
    subject: fc.stringMatching(/^work\.[a-z]{1,8}\.[0-9]{1,2}\.[a-z0-9-]{1,20}$/),
    payload: fc.jsonValue({ maxDepth: 3 }),
    msgId: nonEmpty,
    headers: fc.dictionary(headerName, fc.string({ maxLength: 20 }), { maxKeys: 3 }),
  },
  { requiredKeys: ['subject', 'payload'] },
);
const decisionRecord = fc.record({
  concern: nonEmpty,
  key: nonEmpty,
  viewSeq: fc.nat(),
  decidedAt: isoTime,
  decision: fc.jsonValue({ maxDepth: 3 }).filter((v) => v !== null),
});

/** A valid payload generator for every schema a component decodes bus messages with. */
const VALID = new Map<ZodType<unknown>, fc.Arbitrary<unknown>>([
  [workItemSchema, workItem],
  [handoverWorkSchema, handoverWork],
  [objectEventSchema, objectEvent],
  [pacedItemSchema, pacedItem],
  [decisionRecordSchema, decisionRecord],
]);

/** The router decodes records with `decodeObjectEvent` (gzip and the fast check), not the default. */
function routerDecode(m: { data: Uint8Array }): unknown {
  const decoded = decodeObjectEvent(m.data);
  if (!decoded.ok) throw new Error(decoded.reason);
  return decoded.value;
}

interface Reader {
  concern: string;
  schema: ZodType<unknown>;
  decode?: (m: { data: Uint8Array }) => unknown;
}

/** Every concern a handler runtime consumes (work, the router's records, the pacers' items), and replay's decisions. */
const READERS: Reader[] = [
  ...workConcerns(defaultConfig()).map(({ concern, schema }) => ({ concern, schema })),
  ...INSPECT_ONLY.map(({ concern, schema }) =>
    schema === objectEventSchema ? { concern, schema, decode: routerDecode } : { concern, schema },
  ),
  { concern: 'replay', schema: decisionRecordSchema },
];

function validOf(schema: ZodType<unknown>): fc.Arbitrary<unknown> {
  const arbitrary = VALID.get(schema);
  if (!arbitrary)
    throw new Error('a concern reads a schema this suite has no valid payloads for: add one to VALID');
  return arbitrary;
}

function admitted(reader: Reader, data: Uint8Array) {
  let result: ReturnType<typeof admitPayload<unknown, { data: Uint8Array }>> | undefined;
  expect(() => {
    result = admitPayload({ data }, reader.schema, reader.decode);
  }, `${reader.concern}: admitting a payload threw`).not.toThrow();
  const dlqCheck = decodeMessage(reader.schema, data);
  const admission = result as NonNullable<typeof result>;
  expect(admission.ok, `${reader.concern}: the runtime and \`dlq retry\` must agree on what decodes`).toBe(
    dlqCheck.ok,
  );
  if (!admission.ok) {
    expect(admission.reason).toMatch(/^(undecodable payload|schema validation failed): \S/);
    // The reason travels in a header: it must survive as one (dead-letter.ts cuts and flattens it).
    const record = readDeadLetter({ headers: deadLetterHeaders(deadLetterOf(admission.reason)) });
    expect(record.reason.length).toBeGreaterThan(0);
  }
  return admission;
}

function deadLetterOf(reason: string) {
  return {
    kind: 'invalid' as const,
    reason,
    originalSubject: 'work.x.0.k',
    originalStream: 'WORK',
    originalSeq: 1,
    consumer: 'x',
    deliveryCount: 1,
    at: new Date(0).toISOString(),
  };
}

/** Sets one field (a dotted path) of a copy of `value`, or deletes it. */
function withField(value: unknown, path: string[], replacement: unknown | typeof DELETE): unknown {
  const copy = structuredClone(value) as Record<string, unknown>;
  let at = copy;
  for (const segment of path.slice(0, -1)) at = at[segment] as Record<string, unknown>;
  const last = path[path.length - 1] as string;
  if (replacement === DELETE) delete at[last];
  else at[last] = replacement;
  return copy;
}
const DELETE = Symbol('delete');

const FIELDS = new Map<ZodType<unknown>, string[][]>([
  [workItemSchema, [['key'], ['seq']]],
  [handoverWorkSchema, [['key'], ['seq'], ['config'], ['from'], ['to'], ['trust']]],
  [
    objectEventSchema,
    [
      ['op'],
      ['object'],
      ['observedBy'],
      ['observedAt'],
      ['object', 'metadata'],
      ['object', 'metadata', 'uid'],
    ],
  ],
  [pacedItemSchema, [['subject'], ['msgId'], ['headers']]],
  [decisionRecordSchema, [['concern'], ['key'], ['viewSeq'], ['decidedAt']]],
]);

const wrongValue = fc.oneof(
  fc.constantFrom<unknown>(null, '', -1, 1.5, 2 ** 60, true, [], {}, 'upsert?', '2026-13-45T00:00:00Z'),
  fc.jsonValue({ maxDepth: 2 }),
);

describe('fuzz: bus payloads of every concern', () => {
  it('covers every concern a component reads', () => {
    for (const reader of READERS) expect(() => validOf(reader.schema), reader.concern).not.toThrow();
    expect(READERS.map((r) => r.concern)).toEqual(
      expect.arrayContaining(['assign', 'handover', 'instances', 'router', 'replay']),
    );
  });

  for (const reader of READERS) {
    describe(reader.concern, () => {
      const valid = validOf(reader.schema);

      it('admits every valid payload unchanged, plain or gzip-compressed (nothing valid is lost)', () => {
        fc.assert(
          fc.property(valid, fc.boolean(), (value, compress) => {
            const canonical = JSON.parse(JSON.stringify(value));
            const data = compress
              ? new Uint8Array(gzipSync(JSON.stringify(value)))
              : encodeMessage(reader.schema, value);
            const result = admitted(reader, data);
            if (!result.ok) throw new Error(`a valid payload was refused: ${result.reason}`);
            expect(result.value).toEqual(reader.schema.parse(canonical));
          }),
          fuzz(0.25),
        );
      });

      it('refuses random bytes, truncations and flipped bytes with a reason, never a throw', () => {
        const hostile = fc.oneof(
          fc.uint8Array({ maxLength: 300 }),
          fc.tuple(valid, fc.nat()).map(([v, at]) => {
            const data = encodeMessage(reader.schema, v);
            return data.subarray(0, at % data.length);
          }),
          fc.tuple(valid, fc.nat(), fc.integer({ min: 1, max: 255 })).map(([v, at, x]) => {
            const data = Uint8Array.from(encodeMessage(reader.schema, v));
            const i = at % data.length;
            data[i] = (data[i] as number) ^ x;
            return data;
          }),
          // Invalid UTF-8 inside a string: a lenient decoder would pass on U+FFFD.
          fc.constant(Uint8Array.from([...text('{"key":"'), 0xff, 0xfe, ...text('","seq":1}')])),
          fc.uint8Array({ maxLength: 200 }).map((b) => new Uint8Array(gzipSync(b))),
          fc.uint8Array({ minLength: 2, maxLength: 200 }).map((b) => Uint8Array.from([0x1f, 0x8b, ...b])),
        );
        fc.assert(
          fc.property(hostile, (data) => {
            admitted(reader, data);
          }),
          fuzz(0.25),
        );
      });

      it('refuses a wrong value in a field, naming the field', () => {
        const fields = FIELDS.get(reader.schema) ?? [];
        fc.assert(
          fc.property(
            valid,
            fc.constantFrom(...fields),
            fc.oneof(wrongValue, fc.constant(DELETE)),
            (v, path, repl) => {
              fc.pre(path.slice(0, -1).every((_, i) => typeof walk(v, path.slice(0, i + 1)) === 'object'));
              const mutated = withField(v, path, repl);
              const result = admitted(reader, text(JSON.stringify(mutated)));
              if (!result.ok && result.reason.startsWith('schema validation failed'))
                expect(result.reason, 'the refusal must name the field to fix').toContain(path[0] as string);
            },
          ),
          fuzz(0.25),
        );
      });

      it('reads any JSON, and the payloads of the other concerns, without throwing', () => {
        const others = fc
          .constantFrom(...READERS.filter((r) => r.schema !== reader.schema))
          .chain((other) => validOf(other.schema));
        fc.assert(
          fc.property(fc.oneof(fc.jsonValue(), others), (value) => {
            admitted(reader, text(JSON.stringify(value) ?? 'null'));
          }),
          fuzz(0.25),
        );
      });
    });
  }

  it('refuses 10^4 levels of nesting in a field that must be a string, and a gzip bomb, with a reason', () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const reader of READERS) {
      const result = admitted(
        reader,
        text(`{"key":${deep},"seq":1,"concern":${deep},"subject":${deep},"op":${deep}}`),
      );
      expect(result.ok, reader.concern).toBe(false);
    }
    // Every reader inflates with the same cap: one is enough (each inflation is 64 MiB of work).
    const bomb = new Uint8Array(gzipSync(Buffer.alloc(MAX_INFLATED_BYTES + 1, 0x20)));
    const result = admitted(READERS[0] as Reader, bomb);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/^undecodable payload: /);
  });

  it('compresses what it must, so an oversize valid record still decodes', () => {
    fc.assert(
      fc.property(
        objectEvent,
        fc.integer({ min: COMPRESS_ABOVE_BYTES, max: 4 * COMPRESS_ABOVE_BYTES }),
        (event, size) => {
          const big = { ...event, object: { ...event.object, data: 'x'.repeat(size) } };
          const data = encodeMessage(objectEventSchema, big);
          expect(data[0]).toBe(0x1f);
          expect(decodeObjectEvent(data).ok).toBe(true);
        },
      ),
      fuzz(0.01),
    );
  });

  it('gives a replayed record the same message id, and different changes different ids', () => {
    // The Nats-Msg-Id of a record: the stream stores a replay within its duplicate window once.
    fc.assert(
      fc.property(objectEvent, objectEvent, (a, b) => {
        const replay = decodeObjectEvent(encodeMessage(objectEventSchema, a));
        if (!replay.ok) throw new Error(replay.reason);
        expect(objectEventId(replay.value)).toBe(objectEventId(objectEventSchema.parse(a)));
        const same =
          a.object.metadata.uid === b.object.metadata.uid &&
          (a.op === 'delete'
            ? b.op === 'delete'
            : b.op === 'upsert' && a.object.metadata.resourceVersion === b.object.metadata.resourceVersion);
        expect(objectEventId(objectEventSchema.parse(a)) === objectEventId(objectEventSchema.parse(b))).toBe(
          same,
        );
      }),
      fuzz(0.25),
    );
  });

  it('admits to a pacer only items it can release: a publishable subject, header names and values, a payload it can write', () => {
    const hostileItem = fc.record({
      subject: fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.constantFrom('work.a.0.k', 'work a', 'work..k', 'work.>', ''),
      ),
      // As JSON text: a value 10^4 levels deep cannot be written by JSON.stringify, which is the point.
      payload: fc.oneof(
        { weight: 16, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
        { weight: 1, arbitrary: fc.constant(`${'['.repeat(10_000)}${']'.repeat(10_000)}`) },
        { weight: 1, arbitrary: fc.constant('') },
      ),
      headers: fc.dictionary(
        fc.oneof(headerName, fc.string({ maxLength: 10 }), fc.constantFrom('a b', 'é', 'a:b', '')),
        fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('a\r\nb', '\n')),
        { maxKeys: 3 },
      ),
    });
    const pacer = READERS.find((r) => r.schema === pacedItemSchema) as Reader;
    fc.assert(
      fc.property(hostileItem, ({ payload, ...rest }) => {
        const fields = JSON.stringify(rest).slice(1, -1);
        const body = payload === '' ? `{${fields}}` : `{${fields},"payload":${payload}}`;
        const result = admitted(pacer, text(body));
        if (!result.ok) return;
        const released = result.value as {
          subject: string;
          payload: unknown;
          headers?: Record<string, string>;
        };
        expect(() => JSON.stringify(released.payload), 'an admitted payload must be writable').not.toThrow();
        const h = natsHeaders();
        for (const [k, v] of Object.entries(released.headers ?? {}))
          expect(() => h.set(k, v), `header ${JSON.stringify(k)}`).not.toThrow();
        expect(released.subject).toMatch(/^[^\s.*>]+(\.[^\s.*>]+)*$/);
      }),
      {
        ...fuzz(0.5),
        // Found by this property: admitted, then thrown by the release on every attempt until max_deliver.
        examples: [[{ subject: 'work.a.0.k', payload: '[]', headers: { '': 'a\r\nb' } }]],
      },
    );
  });
});

function walk(value: unknown, path: string[]): unknown {
  let at = value;
  for (const segment of path) at = (at as Record<string, unknown> | undefined)?.[segment];
  return at;
}
