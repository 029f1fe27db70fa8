// FieldRename: same value, same shape, another path. Lossless both ways.
import type { FieldRenameRule } from '../../api/rules.ts';
import { error } from '../diagnostics.ts';
import { describeShape, sameShape } from '../schema.ts';
import { failed, type Located, locate, lookup, sameDescription, type TransformResult } from './common.ts';

export function fieldRename(rule: FieldRenameRule, at: Located): TransformResult {
  const { hubPath, spokePath } = rule.fieldRename;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  if (!sameShape(hub.node.schema, spoke.node.schema)) {
    return {
      ok: false,
      diagnostics: [
        error(
          'ShapeMismatch',
          locate(at, hubPath),
          `FieldRename carries the value unchanged, but hub ${hubPath} is ${describeShape(hub.node.schema)} and spoke ${spokePath} is ${describeShape(spoke.node.schema)}${sameDescription(hub.node, spoke.node)}.`,
          'Make both fields the same shape, or use EnumRemap if only the enum values differ.',
        ),
      ],
    };
  }
  const { ruleIndex } = at;
  const { strategy } = rule;
  const h = hub.node.segments;
  const s = spoke.node.segments;
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [h], spoke: [s] },
      ops: {
        // Literals, not spreads: a replica holds thousands of ops, and a spread object keeps its
        // later fields out of line (an extra allocation each).
        hubToSpoke: { ruleIndex, strategy, kind: 'move', from: h, to: s },
        spokeToHub: { ruleIndex, strategy, kind: 'move', from: s, to: h },
      },
      losses: {},
      onSkip: hubPath === spokePath ? 'carry' : 'lose',
    },
  };
}
