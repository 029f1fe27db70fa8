// The step generator of the randomized lifecycle test: from a source of chance (seeded by the
// test, so a seed replays its sequence), bursts of user actions on instances, configs and target
// CRDs, each burst followed by a quiet period in which the test checks the cluster against the
// model (lifecycle-model.ts). Every step comes with the outcome the model predicts (admitted or
// refused, which deleted instances go), and every quiet period with the world it must show.
//
// Steps are drawn freely from the whole vocabulary, refused ones included (a second default, a
// pool that leaves the default out, a second config for a target): the test asserts the refusal.
// A step is drawn again only when the model could not tell what the cluster does after it (a
// deleted instance that may or may not still be held), so that every outcome is determined.
// The sequence ends by deleting every target, config and instance, then one last quiet period:
// the next seed starts from an empty fleet, and the teardown is checked like any other step.
//
// Pure: the plan is a function of the random source alone.
import {
  applyStep,
  cloneWorld,
  depart,
  departureOf,
  destinations,
  emptyWorld,
  type InstanceSpec,
  type Outcome,
  type Step,
  settle,
  type World,
} from './lifecycle-model.ts';

export interface Vocabulary {
  /** Names an instance may have; at most `maxInstances` exist at once. */
  instances: readonly string[];
  maxInstances: number;
  configs: readonly string[];
  /** CRD names (`<plural>.<group>`) a config may target. */
  targets: readonly string[];
  maxWeight: number;
  /** Replicas of an instance: 1 up to this. */
  maxReplicas: number;
  /** The most steps between two quiet periods. */
  maxBurst: number;
}

export interface PlannedStep {
  index: number;
  step: Step;
  outcome: Outcome;
  /** Present when a quiet period follows this step: the world it must show once settled. */
  quiet?: World;
}

export interface Plan {
  steps: PlannedStep[];
  /** The random steps; the rest is the teardown. */
  randomSteps: number;
}

type Draw = (world: World) => Step | undefined;

export function planLifecycle(random: () => number, count: number, vocabulary: Vocabulary): Plan {
  const world = emptyWorld();
  const steps: PlannedStep[] = [];
  const draws = weightedDraws(random, vocabulary);
  let burstLeft = burstLength(random, vocabulary);
  for (let i = 0; i < count; i++) {
    const step = drawDetermined(world, draws);
    const planned = plan(world, steps.length, step);
    burstLeft--;
    if (burstLeft === 0 || i === count - 1) {
      settle(world);
      planned.quiet = cloneWorld(world);
      burstLeft = burstLength(random, vocabulary);
    }
    steps.push(planned);
  }
  const randomSteps = steps.length;
  for (const step of teardown(world)) steps.push(plan(world, steps.length, step));
  settle(world);
  const last = steps[steps.length - 1];
  if (last) last.quiet = cloneWorld(world);
  return { steps, randomSteps };
}

function plan(world: World, index: number, step: Step): PlannedStep {
  const outcome = applyStep(world, step);
  for (const gone of outcome.goes) depart(world, gone);
  return { index, step, outcome };
}

/** Targets first (nothing names an instance then), then configs (nothing resolves), then instances. */
function teardown(world: World): Step[] {
  return [
    ...[...world.targets.keys()].map((name): Step => ({ kind: 'deleteTarget', name })),
    ...[...world.configs.keys()].map((name): Step => ({ kind: 'deleteConfig', name })),
    ...[...world.instances.values()]
      .filter((i) => !i.terminating)
      .map((i): Step => ({ kind: 'deleteInstance', name: i.name })),
  ];
}

function burstLength(random: () => number, v: Vocabulary): number {
  return 1 + Math.floor(random() * v.maxBurst);
}

const MAX_DRAWS = 200;

function drawDetermined(world: World, draws: () => Draw): Step {
  for (let attempt = 0; attempt < MAX_DRAWS; attempt++) {
    const step = draws()(world);
    if (step !== undefined && determined(world, step)) return step;
  }
  throw new Error(`no determined step found in ${MAX_DRAWS} draws`);
}

/** After the step, and after the instances it frees have gone, every deleted instance is known to be held or gone. */
export function determined(world: World, step: Step): boolean {
  const after = cloneWorld(world);
  const outcome = applyStep(after, step);
  for (const gone of outcome.goes) depart(after, gone);
  return [...after.instances.values()].every(
    (i) => !i.terminating || departureOf(after, i.name) !== 'unknown',
  );
}

// The weights favour what moves a served target (a pin, an unpin, the pool, a weight, the
// default) over what only creates or removes one, and choices that serve one: a config for a
// target that has none, a CRD for a config's target, a pin to an instance that exists. Each
// still draws the other way now and then (a second config for a target, a pin to a missing
// instance), which admission refuses or the resolver reports.
function weightedDraws(random: () => number, v: Vocabulary): () => Draw {
  const pick = <T>(items: readonly T[]): T | undefined =>
    items.length === 0 ? undefined : items[Math.floor(random() * items.length)];
  const chance = (p: number) => random() < p;
  const weight = () => 1 + Math.floor(random() * v.maxWeight);
  const spec = (world: World): InstanceSpec => {
    const hasDefault = [...world.instances.values()].some((i) => i.spec.default);
    return {
      default: chance(hasDefault ? 0.15 : 0.6),
      ...(chance(0.7) && { sharding: { enabled: chance(0.75), weight: weight() } }),
      replicas: 1 + Math.floor(random() * v.maxReplicas),
    };
  };
  const live = (world: World) => [...world.instances.values()].filter((i) => !i.terminating);
  const existing = (world: World) => [...world.instances.values()];
  const converted = (world: World) => new Set([...world.configs.values()].map((c) => c.target));
  const createInstance: Draw = (world) => {
    if (world.instances.size >= v.maxInstances) return undefined;
    const name = pick(v.instances.filter((n) => !world.instances.has(n)));
    return name === undefined ? undefined : { kind: 'createInstance', name, spec: spec(world) };
  };
  const createConfig: Draw = (world) => {
    const name = pick(v.configs.filter((n) => !world.configs.has(n)));
    const free = v.targets.filter((t) => !converted(world).has(t));
    const target = chance(0.85) ? pick(free) : pick(v.targets);
    if (name === undefined || target === undefined) return undefined;
    const pin = chance(0.25) ? pinTarget(world) : undefined;
    return { kind: 'createConfig', name, target, ...(pin !== undefined && { pin }) };
  };
  /** Targets a config converts whose CRD does not exist. */
  const unserved = (world: World) => [...converted(world)].filter((t) => !world.targets.has(t));
  const createTarget: Draw = (world) => {
    const absent = v.targets.filter((t) => !world.targets.has(t));
    const wanted = unserved(world);
    const name = chance(0.8) && wanted.length > 0 ? pick(wanted) : pick(absent);
    return name === undefined ? undefined : { kind: 'createTarget', name };
  };
  const table: [number, Draw][] = [
    [2, createInstance],
    // A fleet of fewer than two live instances moves nothing between them: grow it sooner.
    [6, (world) => (live(world).length < 2 ? createInstance(world) : undefined)],
    [
      1,
      (world) => {
        const i = pick(live(world));
        return i && { kind: 'deleteInstance', name: i.name };
      },
    ],
    [
      1.5,
      (world) => {
        const i = pick(live(world).filter((x) => goesAtOnce(world, x.name)));
        if (!i) return undefined;
        return { kind: 'recreateInstance', name: i.name, spec: chance(0.5) ? i.spec : spec(world) };
      },
    ],
    [
      1.5,
      (world) => {
        const i = pick(existing(world));
        return i && { kind: 'patchInstance', name: i.name, patch: { default: !i.spec.default } };
      },
    ],
    [
      3,
      (world) => {
        const i = pick(existing(world));
        if (!i) return undefined;
        const enabled = !(i.spec.sharding?.enabled ?? false);
        return {
          kind: 'patchInstance',
          name: i.name,
          patch: { sharding: { enabled, weight: i.spec.sharding?.weight ?? weight() } },
        };
      },
    ],
    [
      3,
      (world) => {
        const i = pick(existing(world).filter((x) => x.spec.sharding?.enabled));
        if (!i) return undefined;
        return {
          kind: 'patchInstance',
          name: i.name,
          patch: { sharding: { enabled: true, weight: weight() } },
        };
      },
    ],
    [
      1,
      (world) => {
        const i = pick(live(world));
        if (!i) return undefined;
        const replicas = 1 + ((i.spec.replicas + Math.floor(random() * (v.maxReplicas - 1))) % v.maxReplicas);
        return { kind: 'patchInstance', name: i.name, patch: { replicas } };
      },
    ],
    [4, createConfig],
    // Moves need served targets: keep a few configs, and their CRDs, around.
    [5, (world) => (world.configs.size < 3 ? createConfig(world) : undefined)],
    [4, (world) => (unserved(world).length > 0 ? createTarget(world) : undefined)],
    [
      1.5,
      (world) => {
        const name = pick([...world.configs.keys()]);
        return name === undefined ? undefined : { kind: 'deleteConfig', name };
      },
    ],
    [
      1.5,
      (world) => {
        const name = pick([...world.configs.keys()]);
        return name === undefined ? undefined : { kind: 'recreateConfig', name };
      },
    ],
    [
      4,
      (world) => {
        const config = pick([...world.configs.values()]);
        const instance = pinTarget(world, config?.pin);
        return config === undefined || instance === undefined
          ? undefined
          : { kind: 'pin', name: config.name, instance };
      },
    ],
    [
      3,
      (world) => {
        const name = pick([...world.configs.values()].filter((c) => c.pin !== undefined).map((c) => c.name));
        return name === undefined ? undefined : { kind: 'unpin', name };
      },
    ],
    [3, createTarget],
    [
      1.5,
      (world) => {
        const name = pick([...world.targets.keys()]);
        return name === undefined ? undefined : { kind: 'deleteTarget', name };
      },
    ],
    [
      1.5,
      (world) => {
        const name = pick([...world.targets.keys()]);
        return name === undefined ? undefined : { kind: 'recreateTarget', name };
      },
    ],
  ];
  /**
   * Mostly another instance that exists than the one pinned now; now and then any name, one that
   * does not exist included (the resolver says PinnedInstanceMissing).
   */
  function pinTarget(world: World, pinned?: string): string | undefined {
    const others = existing(world).filter((i) => i.name !== pinned);
    return chance(0.85) ? (pick(others)?.name ?? pick(v.instances)) : pick(v.instances);
  }
  const total = table.reduce((sum, [w]) => sum + w, 0);
  return () => {
    let roll = random() * total;
    for (const [w, draw] of table) {
      roll -= w;
      if (roll < 0) return draw;
    }
    return (table[table.length - 1] as [number, Draw])[1];
  };
}

/** Deleted now, it would go (nothing holds it): it may be deleted and created again in one step. */
function goesAtOnce(world: World, instance: string): boolean {
  const after = cloneWorld(world);
  const i = after.instances.get(instance);
  if (!i) return false;
  i.terminating = true;
  return departureOf(after, instance) === 'goes';
}

/**
 * How many times a served target (its config resolves, its CRD exists) is served by another
 * instance at a quiet period than at the one before: the verified moves a plan asks of the cluster.
 */
export function servedMoves(plan: Plan): number {
  let moves = 0;
  let before: Map<string, string> | undefined;
  for (const { quiet } of plan.steps) {
    if (!quiet) continue;
    const now = destinations(quiet);
    if (before) for (const [target, to] of now) if (before.has(target) && before.get(target) !== to) moves++;
    before = now;
  }
  return moves;
}
