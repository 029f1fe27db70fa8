// One-sided fields: Delete drops the value, DefaultValue and Constant also write one when
// converting into the side that declares the field. Converting away always loses the value.
import type { ConstantRule, DefaultValueRule, DeleteRule, Side, Strategy } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import type { Op } from '../plan.ts';
import { describeShape, misfit, type SchemaNode } from '../schema.ts';
import {
  arrow,
  directionInto,
  type Located,
  locate,
  lookup,
  otherSide,
  sideKey,
  type Transform,
  type TransformResult,
} from './common.ts';

export function deleteField(rule: DeleteRule, at: Located): TransformResult {
  const { path, existsOn } = rule.delete;
  return oneSided(rule.strategy, path, existsOn, at, () => undefined);
}

export function injectValue(
  rule: DefaultValueRule | ConstantRule,
  value: unknown,
  at: Located,
): TransformResult {
  const { path, existsOn } = rule.strategy === 'DefaultValue' ? rule.defaultValue : rule.constant;
  const param = rule.strategy === 'DefaultValue' ? 'defaultValue.default' : 'constant.value';
  return oneSided(rule.strategy, path, existsOn, at, (node) => {
    const problem = misfit(value, node.schema, param);
    if (problem) {
      return error(
        'InvalidValue',
        locate(at, path),
        `${problem}; the field is ${describeShape(node.schema)}.`,
        `Set ${param} to a value the ${sideKey(existsOn)} schema accepts.`,
      );
    }
    return { ruleIndex: at.ruleIndex, strategy: rule.strategy, kind: 'write', to: node.segments, value };
  });
}

function oneSided(
  strategy: Strategy,
  path: string,
  existsOn: Side,
  at: Located,
  intoOp: (node: SchemaNode) => Op | Diagnostic | undefined,
): TransformResult {
  const side = sideKey(existsOn);
  const other = otherSide(side);
  const found = lookup(side, path, at);
  if (!found.ok) return { ok: false, diagnostics: [found.diagnostic] };
  const op = intoOp(found.node);
  if (op && 'severity' in op) return { ok: false, diagnostics: [op] };
  const into = directionInto(side);
  const away = directionInto(other);
  const transform: Transform = {
    path,
    claims:
      side === 'hub' ? { hub: [found.node.segments], spoke: [] } : { hub: [], spoke: [found.node.segments] },
    ops: op ? { [into]: op } : {},
    losses: {
      [away]: `${path} exists only on the ${side}; converting ${arrow(away)} drops its value (${strategy}).`,
    },
    onSkip: 'nothing',
  };
  if (at.ctx[other].node(path))
    transform.needsClaimedElsewhere = { side: other, segments: found.node.segments };
  return { ok: true, transform };
}
