// EnumRemap: a scalar field whose values are spelled differently on each side. Values are
// strings, integers, numbers or booleans, matched by type and value; each side's values are
// checked against that side's schema, so a hub integer may map to a spoke string.
import type { EnumMapping, EnumRemapRule, EnumValue } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { type Direction, enumTable } from '../plan.ts';
import { describeShape, misfit, type SchemaNode, sameShape } from '../schema.ts';
import { failed, type Located, locate, lookup, type SideKey, type TransformResult } from './common.ts';

export function enumRemap(rule: EnumRemapRule, at: Located): TransformResult {
  const { path, mapping, onUnmappedHubValue, onUnmappedSpokeValue } = rule.enumRemap;
  const hub = lookup('hub', path, at);
  const spoke = lookup('spoke', path, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const diagnostics = [
    ...scalarLeafProblems('hub', hub.node, at),
    ...scalarLeafProblems('spoke', spoke.node, at),
    ...mappingValueProblems('hub', hub.node, mapping, at),
    ...mappingValueProblems('spoke', spoke.node, mapping, at),
  ];
  const down = firstWins(mapping.map((m) => [m.hub, m.spoke]));
  const up = firstWins(mapping.map((m) => [m.spoke, m.hub]));
  if (onUnmappedHubValue === 'Error') diagnostics.push(...uncoveredEnumValues('hub', hub.node, down, at));
  if (onUnmappedSpokeValue === 'Error') diagnostics.push(...uncoveredEnumValues('spoke', spoke.node, up, at));
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const { ruleIndex } = at;
  const { strategy } = rule;
  const segments = hub.node.segments;
  const losses: Partial<Record<Direction, string>> = {};
  const downLoss = remapLoss(down, up, onUnmappedHubValue, hub.node, 'onUnmappedHubValue');
  const upLoss = remapLoss(up, down, onUnmappedSpokeValue, spoke.node, 'onUnmappedSpokeValue');
  if (downLoss) losses.hubToSpoke = `${path}: ${downLoss}`;
  if (upLoss) losses.spokeToHub = `${path}: ${upLoss}`;
  return {
    ok: true,
    transform: {
      path,
      claims: { hub: [segments], spoke: [spoke.node.segments] },
      ops: {
        hubToSpoke: {
          ruleIndex,
          strategy,
          kind: 'remap',
          from: segments,
          to: segments,
          table: enumTable(down),
          onUnmapped: onUnmappedHubValue,
        },
        spokeToHub: {
          ruleIndex,
          strategy,
          kind: 'remap',
          from: segments,
          to: segments,
          table: enumTable(up),
          onUnmapped: onUnmappedSpokeValue,
        },
      },
      losses,
      onSkip: sameShape(hub.node.schema, spoke.node.schema) ? 'carry' : 'lose',
    },
  };
}

/** With duplicates in the table, conversion uses the first entry; the loss check sees the rest. */
function firstWins(pairs: [EnumValue, EnumValue][]): Map<EnumValue, EnumValue> {
  const table = new Map<EnumValue, EnumValue>();
  for (const [from, to] of pairs) if (!table.has(from)) table.set(from, to);
  return table;
}

function remapLoss(
  forward: ReadonlyMap<EnumValue, EnumValue>,
  backward: ReadonlyMap<EnumValue, EnumValue>,
  policy: 'Error' | 'Drop',
  source: SchemaNode,
  policyField: string,
): string | undefined {
  for (const [from, to] of forward) {
    const back = backward.get(to);
    if (back !== from) {
      return `${JSON.stringify(from)} becomes ${JSON.stringify(to)}, which converts back to ${JSON.stringify(back)}, so the original value cannot be restored`;
    }
  }
  const declared = source.schema.enum;
  const allMapped = declared?.every((value) => forward.has(value as EnumValue)) ?? false;
  if (policy === 'Drop' && !allMapped)
    return `values the mapping does not list are dropped (${policyField}: Drop)`;
  return undefined;
}

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

function scalarLeafProblems(side: SideKey, node: SchemaNode, at: Located): Diagnostic[] {
  const scalar =
    node.isLeaf && (SCALAR_TYPES.has(node.schema.type ?? '') || node.schema['x-kubernetes-int-or-string']);
  if (scalar) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, node.path),
      `EnumRemap maps string, integer, number or boolean values, but ${side} ${node.path} is ${describeShape(node.schema)}.`,
      'Point EnumRemap at a field typed string, integer, number or boolean on both sides.',
    ),
  ];
}

function mappingValueProblems(
  side: SideKey,
  node: SchemaNode,
  mapping: readonly EnumMapping[],
  at: Located,
): Diagnostic[] {
  return mapping.flatMap((entry, i) => {
    const problem = misfit(entry[side], node.schema, `enumRemap.mapping[${i}].${side}`);
    if (!problem) return [];
    return [
      error(
        'InvalidValue',
        locate(at, node.path),
        `${problem}; the ${side} field is ${describeShape(node.schema)}.`,
        `Use only values the ${side} schema allows in mapping[].${side}.`,
      ),
    ];
  });
}

function uncoveredEnumValues(
  side: SideKey,
  node: SchemaNode,
  table: ReadonlyMap<EnumValue, EnumValue>,
  at: Located,
): Diagnostic[] {
  const missing = (node.schema.enum ?? []).filter((value) => !table.has(value as EnumValue));
  if (missing.length === 0) return [];
  const policy = side === 'hub' ? 'onUnmappedHubValue' : 'onUnmappedSpokeValue';
  return [
    error(
      'UnmappedEnumValue',
      locate(at, node.path),
      `The ${side} schema allows ${missing.map((v) => JSON.stringify(v)).join(', ')} at ${node.path}, which the mapping does not list.`,
      `Add a mapping entry for each, or set ${policy}: Drop with acknowledgeLossy: true to drop them.`,
    ),
  ];
}
