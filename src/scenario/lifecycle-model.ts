// What must hold in a fleet after a user's sequence of creates, deletes, pins and pool changes:
// the model the randomized lifecycle test (test/e2e/lifecycle.e2e.ts) checks a cluster against.
// It records only what the test itself asked for (instances with their default, sharding and
// replicas; configs with their target and pin; which target CRDs exist) and derives the rest
// with the project's own rules: the resolver (core/assignment.ts) says where every config must
// be assigned, the admission rules (core/fleet-admission.ts, core/config-admission.ts) say which
// writes the webhook refuses, and the deletion rule (core/instances/deletion.ts) says whether a
// deleted instance is held by its finalizer.
//
// The one thing it cannot know is where a target's conversion points while moves are in flight.
// It keeps, per target CRD, the set of instances the CRD may name (`mayName`): after a quiet
// period a target whose config resolves names exactly that instance; a target with no config
// (or an unresolvable one) keeps whatever it named, so its set collects every instance it was
// headed for since. Whether a deleted instance can go depends on that set, so the model answers
// `held`, `goes` or `unknown`, and the step generator (lifecycle-steps.ts) never takes a step
// after which the answer for a terminating instance is `unknown`: every step's outcome is then a
// pure function of the steps before it, and a seed replays the same sequence.
//
// Pure: no I/O, no clock.
import { webhookServiceName } from '../api/constants.ts';
import { CRD_CONFIG_KIND } from '../api/conversion-config.ts';
import {
  assignSubjects,
  type ConfigSubject,
  fleetOf,
  type InstanceLike,
  type Resolution,
} from '../core/assignment.ts';
import { duplicateTargetViolation } from '../core/config-admission.ts';
import { violationsIntroduced } from '../core/fleet-admission.ts';

export interface InstanceSpec {
  default: boolean;
  /** Absent: never set (the instance is outside the pool). */
  sharding?: { enabled: boolean; weight: number };
  replicas: number;
}

export interface ModelInstance {
  name: string;
  spec: InstanceSpec;
  /** Deleted and held by its finalizer: it stays in the fleet (and in the resolver's answers) until it goes. */
  terminating: boolean;
}

export interface ModelConfig {
  name: string;
  target: string;
  pin?: string;
}

export interface ModelTarget {
  name: string;
  /** The instances its conversion may name now; `undefined` stands for no Service at all. */
  mayName: Set<string | undefined>;
}

export interface World {
  instances: Map<string, ModelInstance>;
  configs: Map<string, ModelConfig>;
  targets: Map<string, ModelTarget>;
}

export type InstancePatch = Partial<Pick<InstanceSpec, 'default' | 'sharding' | 'replicas'>>;

export type Step =
  | { kind: 'createInstance'; name: string; spec: InstanceSpec }
  | { kind: 'deleteInstance'; name: string }
  | { kind: 'recreateInstance'; name: string; spec: InstanceSpec }
  | { kind: 'patchInstance'; name: string; patch: InstancePatch }
  | { kind: 'createConfig'; name: string; target: string; pin?: string }
  | { kind: 'deleteConfig'; name: string }
  | { kind: 'recreateConfig'; name: string }
  | { kind: 'pin'; name: string; instance: string }
  | { kind: 'unpin'; name: string }
  | { kind: 'createTarget'; name: string }
  | { kind: 'deleteTarget'; name: string }
  | { kind: 'recreateTarget'; name: string };

/** What a step must do on the cluster, as the model predicts it. */
export interface Outcome {
  /** The apiserver accepts the write; false: the admission webhook refuses it (`refusal` says which rule). */
  admitted: boolean;
  refusal?: string;
  /** Terminating instances that nothing holds any more: each is gone once the moves away from it land. */
  goes: string[];
}

export type Departure = 'held' | 'goes' | 'unknown';

export function emptyWorld(): World {
  return { instances: new Map(), configs: new Map(), targets: new Map() };
}

export function cloneWorld(world: World): World {
  return {
    instances: new Map([...world.instances].map(([k, v]) => [k, { ...v, spec: cloneSpec(v.spec) }])),
    configs: new Map([...world.configs].map(([k, v]) => [k, { ...v }])),
    targets: new Map([...world.targets].map(([k, v]) => [k, { name: v.name, mayName: new Set(v.mayName) }])),
  };
}

function cloneSpec(spec: InstanceSpec): InstanceSpec {
  return { ...spec, ...(spec.sharding && { sharding: { ...spec.sharding } }) };
}

function instanceLike(i: ModelInstance): InstanceLike {
  return { metadata: { name: i.name }, spec: { default: i.spec.default, sharding: i.spec.sharding } };
}

function subjectOf(c: ModelConfig): ConfigSubject {
  return { config: `${CRD_CONFIG_KIND}/${c.name}`, target: c.target, pinnedTo: c.pin };
}

/** The resolver's answer for every config's target, over every instance that still exists (terminating ones too). */
export function resolutions(world: World): Map<string, Resolution> {
  const fleet = fleetOf([...world.instances.values()].map(instanceLike));
  return assignSubjects([...world.configs.values()].map(subjectOf), fleet);
}

/** Where each existing target's conversion is headed: its config's resolved instance, if it has one. */
export function destinations(world: World): Map<string, string> {
  const out = new Map<string, string>();
  for (const [target, r] of resolutions(world))
    if (r.ok && world.targets.has(target)) out.set(target, r.instance);
  return out;
}

/** The targets each instance is assigned (its status.assignedTargets), sorted; every existing instance listed. */
export function assignedTargets(world: World): Map<string, string[]> {
  const out = new Map<string, string[]>([...world.instances.keys()].map((i) => [i, []]));
  for (const [target, r] of resolutions(world)) if (r.ok) out.get(r.instance)?.push(target);
  for (const list of out.values()) list.sort();
  return out;
}

/**
 * Whether a deleted instance is held once the fleet settles. `goes`: nothing resolves to it,
 * and every target that may name its Service is headed elsewhere. `held`: a config resolves to
 * it, or a target with nowhere to go names it for sure. Otherwise the model cannot tell.
 */
export function departureOf(world: World, instance: string): Departure {
  for (const r of resolutions(world).values()) if (r.ok && r.instance === instance) return 'held';
  const heading = destinations(world);
  let unknown = false;
  for (const target of world.targets.values()) {
    if (!target.mayName.has(instance)) continue;
    const to = heading.get(target.name);
    if (to !== undefined && to !== instance) continue;
    if (target.mayName.size === 1) return 'held';
    unknown = true;
  }
  return unknown ? 'unknown' : 'goes';
}

/**
 * Applies a step to the model and says what the cluster must do. A refused step changes nothing.
 * The caller removes the instances in `goes` with `depart` once the cluster shows them gone.
 */
export function applyStep(world: World, step: Step): Outcome {
  // Generated only for an instance that goes at once: it is gone before the create is reviewed.
  if (step.kind === 'recreateInstance') depart(world, step.name);
  const refused = refusalOf(world, step);
  if (refused !== undefined) return { admitted: false, refusal: refused, goes: [] };
  switch (step.kind) {
    case 'createInstance':
      world.instances.set(step.name, { name: step.name, spec: cloneSpec(step.spec), terminating: false });
      break;
    case 'deleteInstance':
      mustHaveInstance(world, step.name).terminating = true;
      break;
    case 'recreateInstance':
      world.instances.set(step.name, { name: step.name, spec: cloneSpec(step.spec), terminating: false });
      break;
    case 'patchInstance': {
      const instance = mustHaveInstance(world, step.name);
      instance.spec = { ...instance.spec, ...step.patch };
      break;
    }
    case 'createConfig':
      world.configs.set(step.name, {
        name: step.name,
        target: step.target,
        ...(step.pin !== undefined && { pin: step.pin }),
      });
      break;
    case 'deleteConfig':
      world.configs.delete(step.name);
      break;
    case 'recreateConfig':
      break;
    case 'pin':
      mustHaveConfig(world, step.name).pin = step.instance;
      break;
    case 'unpin':
      delete mustHaveConfig(world, step.name).pin;
      break;
    case 'createTarget':
      world.targets.set(step.name, { name: step.name, mayName: new Set([undefined]) });
      break;
    case 'deleteTarget':
      world.targets.delete(step.name);
      break;
    case 'recreateTarget':
      world.targets.set(step.name, { name: step.name, mayName: new Set([undefined]) });
      break;
  }
  headTowardDestinations(world);
  const goes = [...world.instances.values()]
    .filter((i) => i.terminating && departureOf(world, i.name) === 'goes')
    .map((i) => i.name);
  return { admitted: true, goes };
}

/** A deleted instance is gone: out of the fleet, and no target names its Service any more. */
export function depart(world: World, instance: string): void {
  world.instances.delete(instance);
  for (const target of world.targets.values()) target.mayName.delete(instance);
}

/** After a quiet period every target with a destination names it, and only it. */
export function settle(world: World): void {
  for (const [target, to] of destinations(world)) {
    const t = world.targets.get(target);
    if (t) t.mayName = new Set([to]);
  }
}

// Moves are in flight from the moment a destination changes: the target may name any instance
// it was headed for since the last quiet period.
function headTowardDestinations(world: World): void {
  for (const [target, to] of destinations(world)) world.targets.get(target)?.mayName.add(to);
}

/** Why admission refuses the step, as the webhook's rules decide it; undefined when it is admitted. */
export function refusalOf(world: World, step: Step): string | undefined {
  switch (step.kind) {
    case 'createInstance':
    case 'recreateInstance': {
      const before = [...world.instances.values()].map(instanceLike);
      const after = [...before, instanceLike({ name: step.name, spec: step.spec, terminating: false })];
      return violationsIntroduced(before, after)[0]?.message;
    }
    case 'patchInstance': {
      const fleet = [...world.instances.values()];
      const before = fleet.map(instanceLike);
      const after = fleet.map((i) =>
        instanceLike(i.name === step.name ? { ...i, spec: { ...i.spec, ...step.patch } } : i),
      );
      return violationsIntroduced(before, after)[0]?.message;
    }
    case 'createConfig': {
      const others = [...world.configs.values()].map((c) => ({
        kind: CRD_CONFIG_KIND,
        name: c.name,
        target: c.target,
      }));
      return duplicateTargetViolation({ kind: CRD_CONFIG_KIND, name: step.name, target: step.target }, others)
        ?.message;
    }
    default:
      return undefined;
  }
}

function mustHaveInstance(world: World, name: string): ModelInstance {
  const instance = world.instances.get(name);
  if (!instance) throw new Error(`the model has no instance ${name}`);
  return instance;
}

function mustHaveConfig(world: World, name: string): ModelConfig {
  const config = world.configs.get(name);
  if (!config) throw new Error(`the model has no config ${name}`);
  return config;
}

/** The Service an instance's targets name (in the operator's namespace). */
export function serviceOf(instance: string): string {
  return webhookServiceName(instance);
}

/** One line per step, as a failing seed prints its sequence. */
export function describeStep(step: Step): string {
  switch (step.kind) {
    case 'createInstance':
      return `create instance ${step.name} ${describeSpec(step.spec)}`;
    case 'deleteInstance':
      return `delete instance ${step.name}`;
    case 'recreateInstance':
      return `delete instance ${step.name} and create it again ${describeSpec(step.spec)}`;
    case 'patchInstance':
      return `patch instance ${step.name} ${JSON.stringify(step.patch)}`;
    case 'createConfig':
      return `create config ${step.name} for ${step.target}${step.pin === undefined ? '' : ` pinned to ${step.pin}`}`;
    case 'deleteConfig':
      return `delete config ${step.name}`;
    case 'recreateConfig':
      return `delete config ${step.name} and create it again (same name and spec)`;
    case 'pin':
      return `pin config ${step.name} to ${step.instance}`;
    case 'unpin':
      return `unpin config ${step.name}`;
    case 'createTarget':
      return `create target CRD ${step.name}`;
    case 'deleteTarget':
      return `delete target CRD ${step.name}`;
    case 'recreateTarget':
      return `delete target CRD ${step.name} and create it again`;
  }
}

function describeSpec(spec: InstanceSpec): string {
  const sharding = spec.sharding
    ? `sharding ${spec.sharding.enabled ? 'on' : 'off'} weight ${spec.sharding.weight}`
    : 'no sharding';
  return `(${spec.default ? 'default, ' : ''}${sharding}, ${spec.replicas} replicas)`;
}
