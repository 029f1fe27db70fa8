// Coverage: every field a side declares must be accounted for before a plan may exist. A leaf
// is claimed by a rule on its side, or declared with the same shape on the other side and
// claimed there by none (a field claimed on one side only would be both passed through and
// written by a rule). Anything else is reported, in the order a user reads the schemas.
//
// The first thing a webhook-server replica does for every target it holds is compile it, so
// the check walks both schemas side by side and lets a subtree declared alike on both sides,
// into which no rule of the other side writes, pass whole without visiting its leaves.
import { type Diagnostic, error } from './diagnostics.ts';
import { childSegments, joinPath, type Segments } from './paths.ts';
import { DIRECTIONS, type Direction } from './plan.ts';
import {
  branchFields,
  describeShape,
  differingKeywords,
  isFieldlessObject,
  isOpaque,
  NO_FIELDS,
  type SchemaIndex,
  sameShape,
  type TargetSchema,
} from './schema.ts';
import type { SideKey } from './strategies/common.ts';

/** A field a rule claims on one side: it writes it, so it does not pass through. */
export interface Claim {
  segments: Segments;
  ruleIndex: number;
}

export interface Unclaimed {
  diagnostic: Diagnostic;
  segments: Segments;
  /** The directions a value at this path would not be carried over in. */
  lost: Direction[];
}

/** The leaves of either side no rule accounts for, hub first. */
export function uncoveredFields(
  hub: SchemaIndex,
  spoke: SchemaIndex,
  claims: Record<SideKey, Claim[]>,
  version: string,
): Unclaimed[] {
  const reported = new Set<string>();
  const out: Unclaimed[] = [];
  const check = (side: SideKey, own: SchemaIndex, other: SchemaIndex) => {
    const otherSide = side === 'hub' ? 'spoke' : 'hub';
    const away: Direction = side === 'hub' ? 'hubToSpoke' : 'spokeToHub';
    const firstClaim = (a: Claim | undefined, b: Claim) =>
      a === undefined || claims[otherSide].indexOf(b) < claims[otherSide].indexOf(a) ? b : a;
    // `ownClaims` and `otherClaims` are the claims below `parent`; `otherCover` is the first claim
    // of the other side at or above it.
    const walk = (
      ownFields: Readonly<Record<string, TargetSchema>>,
      otherFields: Readonly<Record<string, TargetSchema>>,
      parent: Segments,
      ownClaims: readonly Claim[],
      otherClaims: readonly Claim[],
      otherCover: Claim | undefined,
    ) => {
      const depth = parent.length;
      for (const name in ownFields) {
        if (!Object.hasOwn(ownFields, name)) continue;
        const ownBelow = claimsThrough(ownClaims, depth, name);
        if (ownBelow.some((c) => c.segments.length === depth + 1)) continue; // claimed whole
        const otherBelow = claimsThrough(otherClaims, depth, name);
        let cover = otherCover;
        for (const c of otherBelow) if (c.segments.length === depth + 1) cover = firstClaim(cover, c);
        const schema = ownFields[name] as TargetSchema;
        const counterpart = Object.hasOwn(otherFields, name) ? otherFields[name] : undefined;
        if (!isOpaque(schema) || isFieldlessObject(schema)) {
          // A subtree declared alike on both sides, into which the other side writes nothing, passes through whole.
          if (!cover && otherBelow.length === 0 && counterpart && sameShape(schema, counterpart)) continue;
          walk(
            branchFields(schema),
            counterpart ? branchFields(counterpart) : NO_FIELDS,
            childSegments(parent, name),
            ownBelow,
            otherBelow.filter((c) => c.segments.length > depth + 1),
            cover,
          );
          continue;
        }
        if (counterpart && !cover && sameShape(schema, counterpart)) continue;
        const segments = childSegments(parent, name);
        const path = joinPath(segments);
        if (reported.has(path)) continue;
        reported.add(path);
        out.push(
          unclaimedLeaf({ side, version, path, segments, schema, counterpart, otherClaim: cover, away }),
        );
      }
    };
    const first = out.length;
    walk(own.fields, other.fields, [], claims[side], claims[otherSide], undefined);
    // Walked in declaration order, reported in key order: sorting the few findings, not every level.
    out.push(...out.splice(first).sort((a, b) => compareSegments(a.segments, b.segments)));
  };
  check('hub', hub, spoke);
  check('spoke', spoke, hub);
  return out;
}

const NO_CLAIMS: readonly Claim[] = [];

/** Depth-first key order: leaves are never each other's prefixes, so element by element decides. */
function compareSegments(a: Segments, b: Segments): number {
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const x = a[i] as string;
    const y = b[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return a.length - b.length;
}

/** The claims whose path runs through `name` at `depth` (the others cannot touch its subtree). */
function claimsThrough(claims: readonly Claim[], depth: number, name: string): readonly Claim[] {
  if (!claims.some((c) => c.segments[depth] === name)) return NO_CLAIMS;
  return claims.filter((c) => c.segments[depth] === name);
}

/** Why a leaf no rule claims cannot pass through. */
function unclaimedLeaf(leaf: {
  side: SideKey;
  version: string;
  path: string;
  segments: Segments;
  schema: TargetSchema;
  counterpart: TargetSchema | undefined;
  otherClaim: Claim | undefined;
  away: Direction;
}): Unclaimed {
  const { side, path, segments, counterpart, otherClaim, away } = leaf;
  const at = { version: leaf.version, path };
  const shape = describeShape(leaf.schema);
  if (otherClaim) {
    return {
      diagnostic: error(
        'UnclaimedField',
        at,
        `The ${side} field ${path} (${shape}) is claimed by no rule, but rule ${otherClaim.ruleIndex} writes it on the other side, so it cannot pass through.`,
        `Claim the ${side} field too: FieldRename it to where it moved, or give it a DefaultValue/Constant/Delete rule.`,
      ),
      segments,
      lost: [away],
    };
  }
  if (!counterpart) {
    const other = side === 'hub' ? 'spoke' : 'hub';
    return {
      diagnostic: error(
        'UnclaimedField',
        at,
        `The ${side} declares ${path} (${shape}) but the ${other} does not, and no rule claims it.`,
        `FieldRename it to the ${other} field it became, or add DefaultValue, Constant or Delete with existsOn: ${side === 'hub' ? 'Hub' : 'Spoke'} (acknowledgeLossy: true).`,
      ),
      segments,
      lost: [away],
    };
  }
  const hubSchema = side === 'hub' ? leaf.schema : counterpart;
  const spokeSchema = side === 'hub' ? counterpart : leaf.schema;
  const hubShape = describeShape(hubSchema);
  const spokeShape = describeShape(spokeSchema);
  return {
    diagnostic: error(
      'UnclaimedField',
      at,
      `${path} differs: hub ${hubShape}, spoke ${spokeShape}${hubShape === spokeShape ? ` (their ${differingKeywords(hubSchema, spokeSchema).join(', ')} differ)` : ''}; no rule claims it.`,
      'Add an EnumRemap if only enum values differ; otherwise make the shapes identical or move the field with FieldRename plus one-sided rules.',
    ),
    segments,
    lost: [...DIRECTIONS],
  };
}
