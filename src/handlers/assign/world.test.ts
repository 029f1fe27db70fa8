import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { encodeMessage, type ObjectEvent, objectEventSchema } from '../../bus/messages.ts';
import { objectSubject } from '../../bus/subjects.ts';
import { ObjectView } from '../../bus/view.ts';
import { ASSIGN_VIEW_KINDS, assignWorldOf, claimantsOf, fleetOfView } from './world.ts';

const log = pino({ level: 'silent' });

/** One change of a config, as the view would read it off the bus. */
type Change = { kind: 'crdconfig' | 'xrdconfig'; name: string; target: string | undefined; deleted: boolean };

function applyChange(view: ObjectView, change: Change, seq: number): void {
  const spec =
    change.target === undefined
      ? {}
      : { [change.kind === 'crdconfig' ? 'targetCRD' : 'targetXRD']: { name: change.target } };
  const event: ObjectEvent = {
    op: change.deleted ? 'delete' : 'upsert',
    object: { metadata: { name: change.name, uid: `u-${change.name}`, resourceVersion: String(seq) }, spec },
    observedBy: 'watch',
    observedAt: new Date(0).toISOString(),
  } as ObjectEvent;
  view.apply({
    subject: objectSubject({ kind: change.kind, namespace: '', name: change.name }),
    seq,
    data: encodeMessage(objectEventSchema, event),
  });
}

const TARGETS = ['a.example.org', 'b.example.org', 'c.example.org'];
const change = fc.record({
  kind: fc.constantFrom('crdconfig' as const, 'xrdconfig' as const),
  name: fc.constantFrom('one', 'two', 'three', 'four'),
  target: fc.option(fc.constantFrom(...TARGETS), { nil: undefined, freq: 6 }),
  deleted: fc.nat(4).map((n) => n === 0),
});

/** What the whole-world derivation says claims a target: the index must always agree. */
function claimantsByWorld(view: ObjectView, target: string): string[] {
  return assignWorldOf(view)
    .configs.filter((c) => c.target === target)
    .map((c) => c.config)
    .sort();
}

function claimantsByIndex(view: ObjectView, target: string): string[] {
  return claimantsOf(view, target)
    .map((c) => c.config)
    .sort();
}

describe('the config index a decision resolves among', () => {
  it('names the same claimants as deriving the whole world, after any sequence of changes', () => {
    fc.assert(
      fc.property(fc.array(fc.array(change, { maxLength: 6 }), { maxLength: 12 }), (batches) => {
        const view = new ObjectView(ASSIGN_VIEW_KINDS, log);
        let seq = 0;
        for (const batch of batches) {
          for (const c of batch) applyChange(view, c, ++seq);
          for (const target of TARGETS)
            expect(claimantsByIndex(view, target)).toEqual(claimantsByWorld(view, target));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('rebuilds from the view when its journal was compacted past what the index had read', () => {
    const view = new ObjectView(ASSIGN_VIEW_KINDS, log);
    applyChange(view, { kind: 'crdconfig', name: 'one', target: TARGETS[0], deleted: false }, 1);
    expect(claimantsByIndex(view, TARGETS[0] as string)).toEqual(['CRDConversionConfig/one']);
    // Far more changes than the journal keeps for three objects.
    let seq = 1;
    for (let i = 0; i < 10_000; i++)
      applyChange(
        view,
        {
          kind: 'crdconfig',
          name: ['one', 'two', 'three'][i % 3] as string,
          target: TARGETS[i % 2],
          deleted: false,
        },
        ++seq,
      );
    expect(view.changesSince('crdconfig', 1)).toBeUndefined();
    for (const target of TARGETS)
      expect(claimantsByIndex(view, target)).toEqual(claimantsByWorld(view, target));
  });
});

describe('the fleet a decision resolves in', () => {
  function applyInstance(view: ObjectView, seq: number, spec: object, status?: object): void {
    const event = {
      op: 'upsert',
      object: { metadata: { name: 'alpha', uid: 'u-alpha', resourceVersion: String(seq) }, spec, status },
      observedBy: 'watch',
      observedAt: new Date(0).toISOString(),
    } as ObjectEvent;
    view.apply({
      subject: objectSubject({ kind: 'webhookserver', namespace: '', name: 'alpha' }),
      seq,
      data: encodeMessage(objectEventSchema, event),
    });
  }

  it('stays the same object through status writes, and is derived again when sharding changes', () => {
    const view = new ObjectView(ASSIGN_VIEW_KINDS, log);
    applyInstance(view, 1, { sharding: { enabled: true, weight: 1 } });
    const first = fleetOfView(view);
    applyInstance(view, 2, { sharding: { enabled: true, weight: 1 } }, { assignedTargetCount: 3 });
    expect(fleetOfView(view)).toBe(first);
    applyInstance(view, 3, { sharding: { enabled: true, weight: 2 } }, { assignedTargetCount: 3 });
    const reweighted = fleetOfView(view);
    expect(reweighted).not.toBe(first);
    expect(reweighted.pool.map((m) => [m.name, m.weight])).toEqual([['alpha', 2]]);
  });
});
