// The layout as a contract (docs/architecture.md): the import graph of src/ has no circle, and
// the bus, the layer every concern stands on, imports none of the layers that stand on it.
// Read from the sources themselves, so a change that breaks either fails here, not in review.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = import.meta.dirname;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each module's relative imports (type-only ones included: a circle of types is a circle of meaning). */
function importGraph(files: readonly string[]): Map<string, string[]> {
  const specifier = /(?:^|\n)\s*(?:import|export)\s[^'";]*?from\s+'(\.{1,2}\/[^']+)'/g;
  return new Map(
    files.map((file) => {
      const text = readFileSync(file, 'utf8');
      const targets = [...text.matchAll(specifier)].map((m) => resolve(dirname(file), m[1] as string));
      return [file, targets];
    }),
  );
}

/** A circle of imports, as paths relative to src/, or undefined when there is none. */
function firstCircle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined;
    if (state.get(file) === 'visiting') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'visiting');
    path.push(file);
    for (const next of graph.get(file) ?? []) {
      const circle = visit(next);
      if (circle) return circle;
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of graph.keys()) {
    const circle = visit(file);
    if (circle) return circle.map((f) => relative(SRC, f));
  }
  return undefined;
}

const every = sourceFiles(SRC);
const production = every.filter((f) => !/\.(test|itest)\.ts$/.test(f));
const graph = importGraph(production);
/** With the tests: a bus itest importing the local stack ties the bus to it as much as code does. */
const graphWithTests = importGraph(every);

describe('the import graph of src/', () => {
  it('has no circle', () => {
    expect(firstCircle(graph)).toBeUndefined();
  });

  it.each([
    'metrics',
    'handlers',
    'local-cluster',
  ])('keeps src/bus, its tests included, from importing src/%s', (layer) => {
    const offending = [...graphWithTests]
      .filter(([file]) => relative(SRC, file).startsWith('bus/'))
      .flatMap(([file, targets]) =>
        targets
          .filter((t) => relative(SRC, t).startsWith(`${layer}/`))
          .map((t) => `${relative(SRC, file)} → ${relative(SRC, t)}`),
      );
    expect(offending).toEqual([]);
  });

  it('keeps the router from importing any concern by name: it routes to the registered list', () => {
    const concerns = ['assign', 'handover', 'lease-aggregate', 'config-status', 'instances'];
    const isConcernModule = (path: string) =>
      concerns.some((c) => path === `handlers/${c}.ts` || path.startsWith(`handlers/${c}/`));
    const router = ['handlers/router.ts', 'handlers/router/run.ts'].map((f) => join(SRC, f));
    const named = router.flatMap((file) =>
      (graph.get(file) ?? []).map((t) => relative(SRC, t)).filter(isConcernModule),
    );
    expect(router.every((file) => graph.has(file))).toBe(true);
    expect(named).toEqual([]);
  });

  it('finds a circle when there is one (the check itself)', () => {
    const a = join(SRC, 'a.ts');
    const b = join(SRC, 'b.ts');
    expect(
      firstCircle(
        new Map([
          [a, [b]],
          [b, [a]],
        ]),
      ),
    ).toEqual(['a.ts', 'b.ts', 'a.ts']);
  });
});
