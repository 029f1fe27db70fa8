import { gzipSync } from 'node:zlib';
import { headers as natsHeaders } from '@nats-io/transport-node';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  concernOfDeadLetterSubject,
  deadLetterJson,
  decodesNow,
  formatDeadLetter,
  formatDeadLetterList,
  formatProgress,
  formatRetryResult,
  formatRetrySummary,
  isProgressPoint,
  PROGRESS_ABOVE,
  parseDeadLetter,
  payloadView,
  type RetryResult,
  redriveMsgId,
  redriveVerdict,
  retryExitCode,
  type StoredDeadLetter,
  type WorkConcern,
} from './dead-letters.ts';
import type { HandlerConsumerSpec } from './runtime/consumers.ts';
import { type DeadLetterRecord, deadLetterHeaders } from './runtime/dead-letter.ts';
import { escapeToken, workSubject } from './subjects.ts';

const itemSchema = z.object({ key: z.string().min(1), seq: z.int().min(0) });

function partitioned(concern: string, partitions: number): HandlerConsumerSpec {
  return {
    mode: 'partitioned',
    stream: 'WORK',
    durable: concern,
    prefix: `work.${concern}`,
    partitions,
    ackWaitMs: 30_000,
    maxDeliver: 10,
  };
}

const CONCERNS: WorkConcern[] = [
  { concern: 'handover', consumers: partitioned('handover', 64), schema: itemSchema },
  { concern: 'assign', consumers: partitioned('assign', 16), schema: itemSchema },
];

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

function record(overrides: Partial<DeadLetterRecord> = {}): DeadLetterRecord {
  return {
    kind: 'permanent',
    reason: 'PermanentError: the config names no target',
    originalSubject: workSubject('handover', 'widgets.example.com', 64),
    originalStream: 'WORK',
    originalSeq: 42,
    consumer: 'handover-p7',
    deliveryCount: 1,
    at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

function stored(r: DeadLetterRecord | undefined, opts: Partial<StoredDeadLetter> = {}): StoredDeadLetter {
  return {
    seq: 9,
    subject: 'dlq.handover',
    time: new Date('2026-01-01T00:00:01.000Z'),
    headers: r ? deadLetterHeaders(r) : undefined,
    data: encode({ key: 'widgets.example.com', seq: 3 }),
    ...opts,
  };
}

function entryOf(r: DeadLetterRecord | undefined, opts: Partial<StoredDeadLetter> = {}) {
  const m = stored(r, opts);
  return { entry: parseDeadLetter(m), data: m.data };
}

describe('reading a dead letter', () => {
  it('reads the record from the headers, with where it is in DLQ', () => {
    const { entry } = entryOf(record());
    expect(entry).toEqual({
      seq: 9,
      subject: 'dlq.handover',
      concern: 'handover',
      storedAt: '2026-01-01T00:00:01.000Z',
      payloadBytes: 37,
      record: record(),
    });
    expect(deadLetterJson(entry)).toMatchObject({ seq: 9, kind: 'permanent', originalSeq: 42 });
  });

  it('keeps a message published to DLQ by hand, saying why it is not a record', () => {
    const h = natsHeaders();
    h.set('Switchyard-Dead-Letter-Kind', 'bogus');
    const { entry } = entryOf(undefined, { headers: h, subject: 'dlq.x.y' });
    expect(entry.record).toBeUndefined();
    expect(entry.concern).toBe('?');
    expect(entry.malformed).toMatch(/invalid/i);
    expect(entry.malformed).not.toMatch(/\n/);
    expect(entryOf(undefined).entry.malformed).toMatch(/no headers/);
  });

  it('names the concern of dlq.<concern> only', () => {
    expect(concernOfDeadLetterSubject('dlq.lease-aggregate')).toBe('lease-aggregate');
    expect(concernOfDeadLetterSubject('dlq')).toBeUndefined();
    expect(concernOfDeadLetterSubject('dlq.a.b')).toBeUndefined();
    expect(concernOfDeadLetterSubject('work.a')).toBeUndefined();
  });
});

describe('whether a dead letter may be re-driven', () => {
  it('re-drives a work item to its original subject when its partition and payload hold now', () => {
    const { entry, data } = entryOf(record());
    expect(redriveVerdict(entry, data, CONCERNS)).toEqual({
      ok: true,
      concern: 'handover',
      subject: workSubject('handover', 'widgets.example.com', 64),
    });
  });

  it('refuses a record, a fan-out item and any stream but WORK, saying what brings the work back', () => {
    const k8s = entryOf(record({ originalStream: 'K8S', originalSubject: 'k8s.crd._.x' }));
    const verdict = redriveVerdict(k8s.entry, k8s.data, CONCERNS);
    expect(verdict).toEqual({
      ok: false,
      reason: expect.stringMatching(/K8S.*not a work item.*next change/),
    });
    const fanout = entryOf(record({ originalStream: 'FANOUT', originalSubject: 'fanout.assign.x' }));
    expect(redriveVerdict(fanout.entry, fanout.data, CONCERNS)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/fan-out item/),
    });
    const other = entryOf(record({ originalStream: 'OTHER', originalSubject: 'work.handover.1.x' }));
    expect(redriveVerdict(other.entry, other.data, CONCERNS)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/only work items/),
    });
  });

  it('refuses a WORK subject no handler consumes: another prefix, an unknown concern, a bad shape', () => {
    for (const [subject, why] of [
      ['recheck.handover.1.x', /only work items/],
      ['work.nosuch.0.x', /no handler consumes work\.nosuch\.0\.x/],
      ['work.handover.x', /not work\.handover\.<partition>\.<key>/],
      ['work.handover.1', /not work\.handover\.<partition>\.<key>/],
      ['work.handover.*.x', /not a valid subject/],
      ['work.handover.1.>', /not a valid subject/],
      ['work.handover..x', /not a valid subject/],
    ] as const) {
      const { entry, data } = entryOf(record({ originalSubject: subject }));
      const v = redriveVerdict(entry, data, CONCERNS);
      expect(v, subject).toMatchObject({ ok: false });
      if (!v.ok) expect(v.reason, subject).toMatch(why);
    }
  });

  it('refuses a key that is in another partition now (the count changed), naming where it belongs', () => {
    const { entry, data } = entryOf(
      record({ originalSubject: workSubject('handover', 'widgets.example.com', 16) }),
    );
    const v = redriveVerdict(entry, data, CONCERNS);
    expect(v).toMatchObject({ ok: false });
    if (!v.ok) expect(v.reason).toContain(workSubject('handover', 'widgets.example.com', 64));
  });

  it('accepts exactly the subject of the key’s partition, for any key and count', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.integer({ min: 1, max: 128 }), (key, n) => {
        const concerns: WorkConcern[] = [
          { concern: 'c', consumers: partitioned('c', n), schema: itemSchema },
        ];
        const subject = workSubject('c', key, n);
        const mk = (s: string) =>
          entryOf(record({ originalSubject: s }), { subject: 'dlq.c', data: encode({ key, seq: 0 }) });
        const right = mk(subject);
        if (!redriveVerdict(right.entry, right.data, concerns).ok) return false;
        const p = Number(subject.split('.')[2]);
        // Any other partition (p + 1 is the next one, or one past the last) is refused.
        const wrong = mk(`work.c.${p + 1}.${escapeToken(key)}`);
        return !redriveVerdict(wrong.entry, wrong.data, concerns).ok;
      }),
      { numRuns: 200 },
    );
  });

  it('refuses a dead letter of one concern whose subject is another’s work', () => {
    const { entry, data } = entryOf(record(), { subject: 'dlq.assign' });
    expect(redriveVerdict(entry, data, CONCERNS)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/dead letter of assign .* handover's work/),
    });
  });

  it('refuses a payload that does not decode now (the handler would dead-letter it again) and one without a record', () => {
    const { entry, data } = entryOf(record({ kind: 'invalid' }), { data: encode({ key: 5 }) });
    expect(redriveVerdict(entry, data, CONCERNS)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/does not decode against handover's schema/),
    });
    expect(decodesNow(entry, data, CONCERNS)).toMatchObject({ ok: false });
    const bare = entryOf(undefined);
    expect(redriveVerdict(bare.entry, bare.data, CONCERNS)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/not a dead-letter record/),
    });
  });

  it('shared consumers: their filter decides', () => {
    const concerns: WorkConcern[] = [
      {
        concern: 'sh',
        consumers: {
          mode: 'shared',
          stream: 'WORK',
          durable: 'sh',
          filterSubject: 'work.sh.>',
          ackWaitMs: 30_000,
          maxDeliver: 3,
        },
        schema: itemSchema,
      },
    ];
    const ok = entryOf(record({ originalSubject: 'work.sh.a.b' }), { subject: 'dlq.sh' });
    expect(redriveVerdict(ok.entry, ok.data, concerns)).toMatchObject({ ok: true, subject: 'work.sh.a.b' });
  });

  it('derives one message id per dead letter', () => {
    expect(redriveMsgId(9)).toBe('dlq-retry:DLQ:9');
    expect(redriveMsgId(9)).not.toBe(redriveMsgId(10));
  });
});

describe('the payload as shown', () => {
  it('pretty-prints JSON, inflates gzip, and keeps text and bytes as they are', () => {
    expect(payloadView(encode({ a: 1 }))).toEqual({ encoding: 'json', text: '{\n  "a": 1\n}' });
    expect(payloadView(new Uint8Array(gzipSync(JSON.stringify({ a: 1 }))))).toEqual({
      encoding: 'gzip+json',
      text: '{\n  "a": 1\n}',
    });
    expect(payloadView(new TextEncoder().encode('{"a": 1'))).toEqual({ encoding: 'text', text: '{"a": 1' });
    expect(payloadView(new Uint8Array([0xff, 0xfe]))).toEqual({ encoding: 'binary', text: '//4=' });
  });
});

describe('formatting', () => {
  const now = Date.parse('2026-01-01T02:00:00.000Z');

  it('lists one line per dead letter with its reason on one line, and a summary', () => {
    const a = entryOf(record({ reason: 'first line\nsecond line' })).entry;
    const b = { ...entryOf(undefined).entry, seq: 10 };
    const text = formatDeadLetterList([a, b], { nowMs: now });
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^SEQ\s+CONCERN\s+KIND\s+TRIES\s+AGE\s+ORIGINAL SUBJECT\s+REASON$/);
    expect(lines[1]).toMatch(
      /^9\s+handover\s+permanent\s+1\s+2h\s+work\.handover\.\d+\.widgets_2eexample_2ecom\s+first line second line$/,
    );
    expect(lines[2]).toMatch(/^10\s+handover\s+\?\s+-\s+1h\s+-\s+not a dead-letter record: no headers$/);
    expect(lines[3]).toBe('2 dead letters (1 permanent, 1 ?); `switchyard dlq show <seq>` for one');
    const reversed = formatDeadLetterList([b, a], { nowMs: now }).trimEnd().split('\n');
    expect(reversed[3]).toBe(lines[3]);
    expect(formatDeadLetterList([], { nowMs: now, concern: 'assign' })).toBe('no dead letters of assign\n');
  });

  it('shows one dead letter: its record, what the kind means, whether it decodes, where it would go', () => {
    const { entry, data } = entryOf(record());
    const text = formatDeadLetter({
      entry,
      headers: [['Switchyard-Dead-Letter-Kind', 'permanent']],
      payload: payloadView(data),
      decodes: decodesNow(entry, data, CONCERNS),
      verdict: redriveVerdict(entry, data, CONCERNS),
      keptUntil: '2026-01-08T00:00:01.000Z',
    });
    expect(text).toContain('dead letter 9\n');
    expect(text).toMatch(/kind +permanent: the handler said the failure is permanent/);
    expect(text).toMatch(/reason +PermanentError: the config names no target/);
    expect(text).toMatch(/decodes now +yes, against handover's schema/);
    expect(text).toMatch(
      /re-drive +to work\.handover\.\d+\.widgets_2eexample_2ecom: `switchyard dlq retry 9`/,
    );
    expect(text).toContain('(kept until 2026-01-08T00:00:01.000Z)');
    expect(text).toContain('    "key": "widgets.example.com",');
  });

  it('exits 0 only when everything asked for was re-driven, and 1 when nothing was asked', () => {
    const ok: RetryResult = { seq: 1, outcome: 'redriven', subject: 's', workSeq: 5, duplicate: false };
    const dry: RetryResult = { seq: 2, outcome: 'would-redrive', subject: 's' };
    expect(retryExitCode([ok, dry])).toBe(0);
    expect(retryExitCode([])).toBe(1);
    expect(retryExitCode([ok, { seq: 3, outcome: 'missing' }])).toBe(1);
    expect(retryExitCode([ok, { seq: 3, outcome: 'refused', reason: 'r' }])).toBe(1);
    expect(retryExitCode([ok, { seq: 3, outcome: 'failed', error: 'e' }])).toBe(1);
    expect(formatRetrySummary([ok, { seq: 3, outcome: 'refused', reason: 'r' }], false)).toBe(
      '1 re-driven, 1 refused\n',
    );
    expect(formatRetrySummary([dry], true)).toBe(
      '1 would be re-driven (dry run: nothing published or removed)\n',
    );
    expect(formatRetrySummary([], false)).toMatch(/^nothing to retry/);
    expect(formatRetryResult({ ...ok, duplicate: true })).toMatch(/already stored by an earlier run/);
    expect(formatRetryResult({ seq: 3, outcome: 'missing' })).toMatch(/^no dead letter 3/);
  });

  it('reports progress about ten times on a long run, and always at the end', () => {
    expect(isProgressPoint(5, PROGRESS_ABOVE - 1)).toBe(false);
    const points = Array.from({ length: 1000 }, (_, i) => i + 1).filter((d) => isProgressPoint(d, 1000));
    expect(points).toEqual([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]);
    const short = Array.from({ length: 30 }, (_, i) => i + 1).filter((d) => isProgressPoint(d, 30));
    expect(short).toEqual([10, 20, 30]);
    expect(formatProgress(10, 30, [{ seq: 1, outcome: 'refused', reason: 'r' }], false)).toBe(
      '… 10/30 (33%): 0 re-driven, 1 refused, 0 failed, 0 gone\n',
    );
  });
});
