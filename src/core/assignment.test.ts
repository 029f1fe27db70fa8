import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AssignmentSubject,
  assignSubjects,
  explain,
  fleetOf,
  type InstanceLike,
  poolMember,
  type Resolution,
  rendezvousWinner,
  resolveIn,
} from './assignment.ts';
import { draw, prefixState, scoreOf, unitFromHash } from './rendezvous-hash.ts';

const instance = (name: string, spec: InstanceLike['spec'] = {}): InstanceLike => ({
  metadata: { name },
  spec,
});
const member = (name: string, weight = 1) => instance(name, { sharding: { enabled: true, weight } });
const ownerOf = (fleet: readonly InstanceLike[], target: string) =>
  instanceOf(resolveIn(fleetOf(fleet), { target }));

function instanceOf(resolution: Resolution): string {
  if (!resolution.ok) throw new Error(resolution.message);
  return resolution.instance;
}

const nameArb = fc.stringMatching(/^[a-z][a-z0-9-]{0,14}$/);
const targetArb = fc
  .tuple(fc.stringMatching(/^[a-z]{1,20}$/), fc.stringMatching(/^[a-z]{1,12}(\.[a-z]{2,8}){1,3}$/))
  .map(([plural, group]) => `${plural}.${group}`);
const poolArb = fc.uniqueArray(fc.record({ name: nameArb, weight: fc.integer({ min: 1, max: 5 }) }), {
  minLength: 1,
  maxLength: 8,
  selector: (m) => m.name,
});
const targetsArb = fc.uniqueArray(targetArb, { minLength: 1, maxLength: 60 });

describe('the rendezvous hash', () => {
  // An independent BigInt statement of the documented function, so a port in another language
  // has a reference and an optimisation of the 32-bit arithmetic cannot change answers.
  function referenceDraw(instanceName: string, target: string): number {
    const mask = (1n << 64n) - 1n;
    let h = 0xcbf29ce484222325n;
    for (const byte of new TextEncoder().encode(`${instanceName}\0${target}`)) {
      h = ((h ^ BigInt(byte)) * 0x100000001b3n) & mask;
    }
    h ^= h >> 33n;
    h = (h * 0xff51afd7ed558ccdn) & mask;
    h ^= h >> 33n;
    h = (h * 0xc4ceb9fe1a85ec53n) & mask;
    h ^= h >> 33n;
    return (Number(h >> 12n) + 0.5) / 2 ** 52;
  }

  it('is FNV-1a 64 + fmix64 mapped to (2k + 1) / 2^53 over its top 52 bits, exactly as documented', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        expect(draw(a, b)).toBe(referenceDraw(a, b));
      }),
      { numRuns: 100 },
    );
  });

  it('maps the extreme hashes strictly inside (0, 1), to finite positive scores (repro: all-ones drew exactly 1)', () => {
    const lowest = unitFromHash(0, 0);
    const highest = unitFromHash(0xffffffff, 0xffffffff);
    expect(lowest).toBe(2 ** -53);
    expect(highest).toBe(1 - 2 ** -53);
    for (const u of [lowest, highest]) {
      const score = scoreOf(1, u);
      expect(Number.isFinite(score) && score > 0, `score ${score} for u = ${u}`).toBe(true);
    }
    // Neighbours at the top stay distinct: the mapping loses no bit it keeps.
    expect(unitFromHash(0xffffffff, 0xffffe000)).toBeLessThan(highest);
  });

  it('gives a one-member pool a winner for every target', () => {
    const pool = [poolMember('only', 1)];
    fc.assert(
      fc.property(targetArb, (t) => {
        expect(rendezvousWinner(pool, t)?.name).toBe('only');
      }),
    );
  });

  it('never draws 0 or 1, so every score is finite and positive', () => {
    fc.assert(
      fc.property(nameArb, targetArb, (a, t) => {
        const u = draw(a, t);
        expect(u > 0 && u < 1).toBe(true);
      }),
    );
  });
});

describe('assignment precedence', () => {
  it('pinning wins over the pool and the default', () => {
    const fleet = [instance('a', { default: true, sharding: { enabled: true } }), member('b'), instance('c')];
    expect(resolveIn(fleetOf(fleet), { target: 'x.example.com', pinnedTo: 'c' })).toEqual({
      ok: true,
      instance: 'c',
      decidedBy: 'Pinned',
    });
  });

  it('the pool wins over the default', () => {
    const fleet = [instance('a', { default: true }), member('b')];
    expect(resolveIn(fleetOf(fleet), { target: 'x.example.com' })).toMatchObject({
      instance: 'b',
      decidedBy: 'Pool',
    });
  });

  it('the default serves when no instance has sharding enabled', () => {
    const fleet = [instance('a', { default: true, sharding: { enabled: false } }), instance('b')];
    expect(resolveIn(fleetOf(fleet), { target: 'x.example.com' })).toMatchObject({
      instance: 'a',
      decidedBy: 'Default',
    });
  });

  it('a non-positive weight keeps an instance out of the pool', () => {
    const fleet = [
      instance('a', { default: true }),
      instance('b', { sharding: { enabled: true, weight: 0 } }),
    ];
    expect(resolveIn(fleetOf(fleet), { target: 'x.example.com' })).toMatchObject({ instance: 'a' });
  });

  it('a pin to a missing instance is an error that says what to do', () => {
    const r = resolveIn(fleetOf([instance('a', { default: true })]), { target: 't.x.io', pinnedTo: 'gone' });
    expect(r).toMatchObject({ ok: false, reason: 'PinnedInstanceMissing' });
    expect(!r.ok && r.message).toMatch(/"gone", which does not exist/);
  });

  it('no pool and no default is an error that says what to do', () => {
    const r = resolveIn(fleetOf([instance('a')]), { target: 't.x.io' });
    expect(r).toMatchObject({ ok: false, reason: 'NoInstance' });
    expect(!r.ok && r.message).toMatch(/mark one instance spec.default: true/);
  });

  it('two defaults without a pool is an error naming both', () => {
    const r = resolveIn(fleetOf([instance('b', { default: true }), instance('a', { default: true })]), {
      target: 't.x.io',
    });
    expect(r).toMatchObject({ ok: false, reason: 'MultipleDefaults' });
    expect(!r.ok && r.message).toMatch(/\(a, b\)/);
  });
});

describe('weighted rendezvous over the pool', () => {
  it('is deterministic and independent of the order instances are listed in', () => {
    fc.assert(
      fc.property(
        poolArb.chain((pool) =>
          fc.tuple(fc.constant(pool), fc.shuffledSubarray(pool, { minLength: pool.length })),
        ),
        targetsArb,
        ([pool, reordered], targets) => {
          const fleet = pool.map((m) => member(m.name, m.weight));
          const shuffled = reordered.map((m) => member(m.name, m.weight));
          for (const t of targets) expect(ownerOf(shuffled, t)).toBe(ownerOf(fleet, t));
        },
      ),
    );
  });

  it('never moves a pinned config, whatever happens to the pool or the default', () => {
    fc.assert(
      fc.property(poolArb, poolArb, targetArb, (before, after, target) => {
        const pinned = instance('pinned-home');
        const subject: AssignmentSubject = { target, pinnedTo: 'pinned-home' };
        for (const pool of [before, after]) {
          const fleet = [...pool.map((m) => member(m.name, m.weight)), pinned];
          expect(instanceOf(resolveIn(fleetOf(fleet), subject))).toBe('pinned-home');
        }
      }),
    );
  });

  it('adding an instance moves only the targets the new instance wins, nothing between the others', () => {
    fc.assert(
      fc.property(poolArb, targetsArb, fc.integer({ min: 1, max: 5 }), (pool, targets, weight) => {
        const before = pool.map((m) => member(m.name, m.weight));
        const after = [...before, member('newcomer-0', weight)];
        for (const t of targets) {
          const [was, now] = [ownerOf(before, t), ownerOf(after, t)];
          if (now !== was) expect(now).toBe('newcomer-0');
        }
      }),
    );
  });

  it('removing an instance moves only the targets it held', () => {
    fc.assert(
      fc.property(
        poolArb.filter((p) => p.length >= 2),
        targetsArb,
        (pool, targets) => {
          const before = pool.map((m) => member(m.name, m.weight));
          const [removed, ...rest] = before;
          for (const t of targets) {
            const was = ownerOf(before, t);
            if (was !== removed?.metadata.name) expect(ownerOf(rest, t)).toBe(was);
          }
        },
      ),
    );
  });

  it('gives each member a share converging to weight / Σweight', () => {
    // 30,000 targets: one standard deviation of a 1/6 share is ~0.2 percentage points, so 1.5
    // points of tolerance leaves no room for chance but plenty for a biased formula (weight ×
    // hash gives the weight-3 member 0.58 instead of 0.5).
    const fleet = [member('a', 1), member('b', 2), member('c', 3)];
    const digested = fleetOf(fleet);
    const counts = new Map<string, number>();
    const n = 30_000;
    for (let i = 0; i < n; i++) {
      const owner = instanceOf(resolveIn(digested, { target: `widgets${i}.team${i % 97}.example.com` }));
      counts.set(owner, (counts.get(owner) ?? 0) + 1);
    }
    for (const [name, weight] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const) {
      expect(Math.abs((counts.get(name) ?? 0) / n - weight / 6), `share of ${name}`).toBeLessThan(0.015);
    }
  });

  it('breaks exact ties towards the smaller name', () => {
    const prefix = prefixState('same-draws');
    const tied = [
      { ...poolMember('a', 1), prefix },
      { ...poolMember('b', 1), prefix },
    ];
    expect(rendezvousWinner(tied, 'gadgets.example.com')?.name).toBe('a');
    expect(fleetOf([member('b'), member('a')]).pool.map((m) => m.name)).toEqual(['a', 'b']);
  });
});

describe('resolving a fleet from the resolutions in an earlier one', () => {
  const subjectArb = fc.record(
    { target: targetArb, pinnedTo: fc.option(fc.constantFrom('p0', 'p1', 'absent'), { nil: undefined }) },
    { requiredKeys: ['target'] },
  );
  const subjectsArb = fc
    .array(subjectArb, { minLength: 1, maxLength: 60 })
    .map((subjects) => subjects.map((s, i) => ({ ...s, config: `CRDConversionConfig/c${i % 50}` })));
  /** One pool member added, removed or reweighted, or a default or pinned instance changed: what one instance's change does. */
  const oneChangeArb = fc.oneof(
    fc.record({ op: fc.constant('add' as const), weight: fc.integer({ min: 1, max: 5 }) }),
    fc.record({ op: fc.constant('remove' as const), at: fc.nat() }),
    fc.record({ op: fc.constant('reweight' as const), at: fc.nat(), weight: fc.integer({ min: 1, max: 5 }) }),
    fc.record({ op: fc.constant('default' as const) }),
  );
  const others = [instance('p0'), instance('p1', { default: true })];

  type Change = { op: 'add' | 'remove' | 'reweight' | 'default'; at?: number; weight?: number };

  function changed(pool: readonly { name: string; weight: number }[], change: Change): InstanceLike[] {
    const members = pool.map((m) => member(m.name, m.weight));
    const at = (change.at ?? 0) % members.length;
    if (change.op === 'add') members.push(member('joiner-0', change.weight));
    if (change.op === 'remove') members.splice(at, 1);
    if (change.op === 'reweight') members[at] = member(pool[at]?.name ?? '', change.weight);
    return [
      ...members,
      change.op === 'default' ? instance('p0', { default: true }) : instance('p0'),
      others[1] as InstanceLike,
    ];
  }

  it('gives exactly what resolving from scratch gives, whatever changed', () => {
    fc.assert(
      fc.property(subjectsArb, poolArb, oneChangeArb, fc.boolean(), (subjects, pool, change, unrelated) => {
        const before = fleetOf([...pool.map((m) => member(m.name, m.weight)), ...others]);
        // The usual start is the fleet just before; one that differs in several members is resolved from scratch.
        const start = unrelated ? fleetOf([member('q', 2), member('r'), ...others]) : before;
        const after = fleetOf(changed(pool, change));
        const earlier = { fleet: start, resolutions: assignSubjects(subjects, start) };
        expect(assignSubjects(subjects, after, earlier)).toEqual(assignSubjects(subjects, after));
      }),
    );
  });
});

describe('two configs for one target', () => {
  const config = (
    kind: 'CRDConversionConfig' | 'XRDConversionConfig',
    name: string,
    target: string,
    pin?: string,
  ) => ({ config: `${kind}/${name}`, target, ...(pin === undefined ? {} : { pinnedTo: pin }) }) as const;

  it('is a conflict, the same whatever order the configs come in (repro: CRD and XRD configs resolved by order)', () => {
    const fleet = fleetOf([instance('a', { default: true }), instance('b')]);
    const crd = config('CRDConversionConfig', 'c', 'widgets.example.com', 'b');
    const xrd = config('XRDConversionConfig', 'x', 'widgets.example.com');
    const one = assignSubjects([crd, xrd], fleet).get('widgets.example.com');
    const other = assignSubjects([xrd, crd], fleet).get('widgets.example.com');
    expect(one).toEqual(other);
    expect(one).toMatchObject({ ok: false, reason: 'DuplicateTarget' });
    expect(!one?.ok && one?.message).toMatch(
      /^CRDConversionConfig\/c and XRDConversionConfig\/x all convert/,
    );
  });

  it('leaves the other targets resolved', () => {
    const fleet = fleetOf([instance('a', { default: true })]);
    const out = assignSubjects(
      [
        config('CRDConversionConfig', 'c', 't.x.io'),
        config('XRDConversionConfig', 'x', 't.x.io'),
        config('CRDConversionConfig', 'u', 'u.x.io'),
      ],
      fleet,
    );
    expect(out.get('u.x.io')).toMatchObject({ ok: true, instance: 'a' });
  });
});

describe('explain', () => {
  it('lists every member score, highest first, and names the deciding rule', () => {
    const fleet = [
      member('a', 1),
      member('b', 2),
      instance('c', { default: true, sharding: { enabled: true } }),
    ];
    const e = explain({ target: 'gadgets.example.com' }, fleet);
    expect(e.resolution).toMatchObject({ ok: true, decidedBy: 'Pool' });
    expect(e.scores.map((s) => s.instance).sort()).toEqual(['a', 'b', 'c']);
    expect(e.scores[0]?.instance).toBe(e.resolution.ok ? e.resolution.instance : undefined);
    for (let i = 1; i < e.scores.length; i++) {
      expect(e.scores[i - 1]?.score).toBeGreaterThanOrEqual(e.scores[i]?.score ?? 0);
    }
  });

  it('has no scores when a pin decided', () => {
    const e = explain({ target: 'gadgets.example.com', pinnedTo: 'a' }, [member('a')]);
    expect(e).toMatchObject({ resolution: { decidedBy: 'Pinned' }, scores: [] });
  });
});
