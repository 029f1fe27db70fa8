// CEL: two expressions, one per direction, over `object` (the input), each returning a map from
// destination path to value; only the rule's declared destinations are written. The engine cannot
// prove the two expressions inverse, so the rule is lossy both ways and there is no
// losslessOverride, as in the reference. The expressions are parsed and type-checked here, at
// compile time (cel/cel-program.ts), and evaluated per object under a cost limit and a deadline,
// so a hostile expression fails its own conversions and stalls nothing else.
import type { RuleOf } from '../../api/rules.ts';
import {
  type CelCompiled,
  type CelDirection,
  type CelProgram,
  compileCelExpression,
  evaluateCelProgram,
} from '../cel/cel-program.ts';
import { CompileCache } from '../compile-cache.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { writeField } from '../field-access.ts';
import type { Segments } from '../paths.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import type { SchemaNode } from '../schema.ts';
import { type Located, type Lookup, locate, lookup, type SideKey, type TransformResult } from './common.ts';

type CelRule = RuleOf<'CEL'>;

export function cel(rule: CelRule, at: Located): TransformResult {
  const { hubPaths, spokePaths, hubToSpoke, spokeToHub } = rule.cel;
  const hub = lookupAll('hub', hubPaths, at);
  const spoke = lookupAll('spoke', spokePaths, at);
  const down = compiledExpression(hubToSpoke, 'hubToSpoke', spokePaths);
  const up = compiledExpression(spokeToHub, 'spokeToHub', hubPaths);
  const diagnostics = [...hub.diagnostics, ...spoke.diagnostics];
  if (!down.ok) diagnostics.push(invalidExpression(down.problem, hubPaths[0] ?? '', at));
  if (!up.ok) diagnostics.push(invalidExpression(up.problem, hubPaths[0] ?? '', at));
  if (diagnostics.length > 0 || !down.ok || !up.ok) return { ok: false, diagnostics };
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy };
  const hubSegments = hub.nodes.map((n) => n.segments);
  const spokeSegments = spoke.nodes.map((n) => n.segments);
  const ops: Record<Direction, Op> = {
    hubToSpoke: {
      ...base,
      kind: 'run',
      from: hubSegments[0] as Segments,
      to: spokeSegments[0] as Segments,
      run: evaluate(down.program),
    },
    spokeToHub: {
      ...base,
      kind: 'run',
      from: spokeSegments[0] as Segments,
      to: hubSegments[0] as Segments,
      run: evaluate(up.program),
    },
  };
  const unproven = 'the engine cannot prove the two CEL expressions inverse (CEL is always lossy).';
  return {
    ok: true,
    transform: {
      path: hubPaths[0] as string,
      claims: { hub: hubSegments, spoke: spokeSegments },
      ops,
      losses: { hubToSpoke: unproven, spokeToHub: unproven },
      onSkip: 'lose',
    },
  };
}

const PROGRAMS = new CompileCache<CelCompiled>();

/** A compiled program is immutable: one serves every rule that spells the same expression. */
function compiledExpression(
  source: string,
  direction: CelDirection,
  destinations: readonly string[],
): CelCompiled {
  return PROGRAMS.get(`${direction}\u0000${destinations.join('\u0000')}\u0000${source}`, () =>
    compileCelExpression(source, direction, destinations),
  );
}

function lookupAll(side: SideKey, paths: readonly string[], at: Located) {
  const found: Lookup[] = paths.map((path) => lookup(side, path, at));
  return {
    nodes: found.flatMap((l): SchemaNode[] => (l.ok ? [l.node] : [])),
    diagnostics: found.flatMap((l): Diagnostic[] => (l.ok ? [] : [l.diagnostic])),
  };
}

function invalidExpression(problem: string, path: string, at: Located): Diagnostic {
  return error(
    'InvalidExpression',
    locate(at, path),
    `cel.${problem}.`,
    'Fix the expression: `object` is the input (numbers are doubles), and the result a map from destination path to value.',
  );
}

/** Evaluates the program on the input and writes each destination the result holds. */
function evaluate(program: CelProgram): OpRun {
  return (input, output) => {
    const evaluated = evaluateCelProgram(program, input);
    if (!evaluated.ok) return { message: `cel (${program.direction}): ${evaluated.message}` };
    for (const write of evaluated.values) {
      const failed = writeField(output, write.segments, write.value);
      if (failed) return failed;
    }
    return undefined;
  };
}
