// ScalarToObject and ObjectToScalar: a scalar on one side is the value under `key` of an object
// on the other (`replicas: 3` and `replicas: {count: 3}`). The object is built with
// `defaultsForOtherKeys` beside the key; unwrapping it keeps only the key, so the direction
// towards the scalar loses the object's other keys whenever its schema declares any.
import type { RuleOf } from '../../api/rules.ts';
import { readField, writeField } from '../field-access.ts';
import { deepCopy, isJsonObject, type JsonObject, setOwn } from '../json.ts';
import type { Segments } from '../paths.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import { branchFields, type SchemaNode } from '../schema.ts';
import { failed, type Located, lookup, type TransformResult } from './common.ts';

type Rule = RuleOf<'ScalarToObject'> | RuleOf<'ObjectToScalar'>;

export function scalarObject(rule: Rule, at: Located): TransformResult {
  const params = rule.strategy === 'ScalarToObject' ? rule.scalarToObject : rule.objectToScalar;
  const { hubPath, spokePath, key } = params;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const objectOnHub = rule.strategy === 'ObjectToScalar';
  const object = objectOnHub ? hub.node : spoke.node;
  const scalar = objectOnHub ? spoke.node : hub.node;
  const defaults = params.defaultsForOtherKeys ?? {};
  const toScalar: Direction = objectOnHub ? 'hubToSpoke' : 'spokeToHub';
  const toObject: Direction = objectOnHub ? 'spokeToHub' : 'hubToSpoke';
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy };
  const ops: Record<Direction, Op> = {
    [toObject]: {
      ...base,
      kind: 'run',
      from: scalar.segments,
      to: object.segments,
      run: wrap(scalar.segments, object.segments, key, defaults),
    },
    [toScalar]: {
      ...base,
      kind: 'run',
      from: object.segments,
      to: scalar.segments,
      run: unwrap(object.segments, scalar.segments, key),
    },
  } as Record<Direction, Op>;
  const others = otherKeys(object, key);
  const losses: Partial<Record<Direction, string>> = {};
  if (others.length > 0) {
    losses[toScalar] =
      `${object.path} also declares ${others.join(', ')}, which the scalar ${scalar.path} cannot hold (${rule.strategy} keeps only ${key}).`;
  }
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: objectOnHub
        ? { hub: [object.segments], spoke: [scalar.segments] }
        : { hub: [scalar.segments], spoke: [object.segments] },
      ops,
      losses,
      onSkip: 'lose',
    },
  };
}

/** The keys the object's schema declares besides `key`. */
function otherKeys(object: SchemaNode, key: string): string[] {
  return Object.keys(branchFields(object.schema)).filter((name) => name !== key);
}

/** The scalar at `from` becomes `{key: scalar, ...defaults}` at `to`; an absent scalar writes nothing. */
function wrap(from: Segments, to: Segments, key: string, defaults: Readonly<JsonObject>): OpRun {
  return (input, output, take) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    const object: JsonObject = {};
    for (const name of Object.keys(defaults)) setOwn(object, name, deepCopy(defaults[name]));
    setOwn(object, key, take(value));
    return writeField(output, to, object);
  };
}

/** The value under `key` of the object at `from` is written at `to`; anything else writes nothing. */
function unwrap(from: Segments, to: Segments, key: string): OpRun {
  return (input, output, take) => {
    const object = readField(input, from);
    if (!isJsonObject(object) || !Object.hasOwn(object, key)) return undefined;
    return writeField(output, to, take(object[key]));
  };
}
