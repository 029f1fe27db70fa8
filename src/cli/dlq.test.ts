import { describe, expect, it } from 'vitest';
import { deadLetterSubjectOf } from '../bus/dead-letters.ts';
import { planHandlerConsumers } from '../bus/runtime/index.ts';
import { configSchema, defaultConfig } from '../config/schema.ts';
import { ASSIGN_PACER } from '../handlers/assign.ts';
import { resyncPacerOf } from '../handlers/resync.ts';
import { INSPECT_ONLY, parseDlqArgs, workConcerns } from './dlq.ts';

describe('switchyard dlq arguments', () => {
  it('reads list, show and retry', () => {
    expect(parseDlqArgs(['list'])).toEqual({ command: 'list', concern: undefined, output: 'table' });
    expect(parseDlqArgs(['list', '--concern=handover', '-o', 'json'])).toEqual({
      command: 'list',
      concern: 'handover',
      output: 'json',
    });
    expect(parseDlqArgs(['show', '12', '-o=json'])).toEqual({ command: 'show', seq: 12, output: 'json' });
    expect(parseDlqArgs(['retry', '3', '4'])).toEqual({
      command: 'retry',
      seqs: [3, 4],
      concern: undefined,
      dryRun: false,
      output: 'table',
    });
    expect(parseDlqArgs(['retry', '--all', '--concern=assign', '--dry-run'])).toEqual({
      command: 'retry',
      seqs: 'all',
      concern: 'assign',
      dryRun: true,
      output: 'table',
    });
  });

  it.each([
    [[]],
    [['purge']],
    [['list', '3']],
    [['list', '--all']],
    [['show']],
    [['show', '1', '2']],
    [['show', '0']],
    [['show', 'x']],
    [['show', '1', '--concern=a']],
    [['retry']],
    [['retry', '--all', '3']],
    [['retry', '-3']],
    [['retry', '--all', '--concern=a.b']],
    [['retry', '--all', '--concern']],
    [['list', '-o', 'wide']],
    [['list', '--verbose']],
  ])('refuses %j', (args) => {
    expect(() => parseDlqArgs(args)).toThrow();
  });

  it('says what is wrong, naming the command and the argument', () => {
    expect(() => parseDlqArgs(['purge'])).toThrow('dlq: unknown command purge (list, show, retry)');
    expect(() => parseDlqArgs(['list', '3'])).toThrow('dlq list: unexpected argument 3');
    expect(() => parseDlqArgs(['list', '--all'])).toThrow('dlq list: --all applies only to dlq retry');
    expect(() => parseDlqArgs(['show', '1', '--concern=a'])).toThrow(
      'dlq show: --concern applies only to dlq list and retry',
    );
    expect(() => parseDlqArgs(['show', 'x'])).toThrow('dlq show: x is not a DLQ sequence');
    expect(() => parseDlqArgs(['retry', '-3'])).toThrow('dlq retry: unknown argument -3');
    expect(() => parseDlqArgs(['retry', '--all', '--concern'])).toThrow('dlq retry: --concern needs a value');
    expect(() => parseDlqArgs(['retry', '--all', '--concern=a.b'])).toThrow(
      'dlq retry: --concern=a.b is not a concern name',
    );
    expect(() => parseDlqArgs(['list', '-o', 'wide'])).toThrow(
      'dlq list: -o takes table, json, yaml, got "wide"',
    );
  });

  it("takes kubectl's cluster flags, to find the bus with", () => {
    expect(parseDlqArgs(['retry', '3', '--context', 'prod', '-n', 'sy'])).toMatchObject({
      seqs: [3],
      context: 'prod',
      namespace: 'sy',
    });
  });
});

describe('the work concerns dlq re-drives to', () => {
  it('are every handler concern on WORK, with the configured partition counts', () => {
    const config = configSchema.parse({ bus: { partitions: { handover: 7 } } });
    const concerns = workConcerns(config);
    expect(concerns.map((c) => c.concern).sort()).toEqual([
      'assign',
      'config-status',
      'handover',
      'instances',
      'lease-aggregate',
    ]);
    for (const c of concerns) {
      expect(c.consumers.stream, c.concern).toBe('WORK');
      expect(c.consumers.mode === 'partitioned' && c.consumers.prefix, c.concern).toBe(`work.${c.concern}`);
    }
    const handover = concerns.find((c) => c.concern === 'handover');
    if (!handover) throw new Error('no handover concern');
    expect(planHandlerConsumers(handover.consumers)).toHaveLength(7);
  });

  it('show decodes the router’s and the pacer’s dead letters too, under the subjects they use', () => {
    expect(INSPECT_ONLY.map((c) => deadLetterSubjectOf(c.concern))).toEqual([
      'dlq.router',
      ASSIGN_PACER.deadLetterSubject,
      ...['assign', 'lease-aggregate', 'handover', 'config-status', 'instances'].map(
        (concern) => resyncPacerOf(concern).deadLetterSubject,
      ),
    ]);
  });

  it('decode a handover work item with its hints, and refuse one without a key', () => {
    const handover = workConcerns(defaultConfig()).find((c) => c.concern === 'handover');
    expect(handover?.schema.safeParse({ key: 't', seq: 1, from: 'a', to: 'b', trust: true }).success).toBe(
      true,
    );
    expect(handover?.schema.safeParse({ seq: 1 }).success).toBe(false);
  });
});
