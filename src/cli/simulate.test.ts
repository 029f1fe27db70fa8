import { describe, expect, it } from 'vitest';
import { subjectOf } from '../core/assignment.ts';
import { applyPoolChange, simulate } from '../core/simulate.ts';
import { fleetOfFile, formatSimulation, parseSimulateArgs } from './simulate.ts';

const FLEET = `
apiVersion: v1
kind: List
items:
  - apiVersion: switchyard.dev/v1alpha1
    kind: ConversionWebhookServer
    metadata: { name: alpha, uid: u1 }
    spec: { sharding: { enabled: true } }
  - apiVersion: switchyard.dev/v1alpha1
    kind: ConversionWebhookServer
    metadata: { name: bravo, uid: u2 }
    spec: { sharding: { enabled: true, weight: 2 } }
  - apiVersion: switchyard.dev/v1alpha1
    kind: ConversionWebhookServer
    metadata: { name: broken }
    spec: { sharding: { enabled: true, weight: -3 } }
---
${Array.from(
  { length: 40 },
  (_, i) => `apiVersion: switchyard.dev/v1alpha1
kind: CRDConversionConfig
metadata: { name: c${i} }
spec:
  targetCRD: { name: t${i}.example.com }
  hubVersion: v1
  spokes: [{ version: v2, rules: [] }]
`,
).join('---\n')}`;

describe('switchyard simulate', () => {
  it('reads flags: repeated changes, weights, the file, json', () => {
    const args = parseSimulateArgs([
      '--add=delta:3',
      '--add=echo',
      '--remove=alpha',
      '--weight=bravo=5',
      '--from-file=f.yaml',
      '-o',
      'json',
    ]);
    expect(args.change).toEqual({
      add: [
        { name: 'delta', weight: 3 },
        { name: 'echo', weight: 1 },
      ],
      remove: ['alpha'],
      reweight: [{ name: 'bravo', weight: 5 }],
    });
    expect(args).toMatchObject({ fromFile: 'f.yaml', output: 'json', allMoves: false });
  });

  it.each([
    [[]],
    [['--add=']],
    [['--add=x:y']],
    [['--weight=bravo']],
    [['--frobnicate']],
    [['--add=x', '-o', 'wide']],
  ])('refuses %j with a usage error', (argv) => {
    expect(() => parseSimulateArgs(argv)).toThrow();
  });

  it('reads a kubectl list of instances and configs, and leaves out, by name, what the API would refuse', () => {
    const fleet = fleetOfFile(FLEET);
    expect(fleet.instances.map((i) => i.metadata.name)).toEqual(['alpha', 'bravo']);
    expect(fleet.configs).toHaveLength(40);
    expect(fleet.skipped).toHaveLength(1);
    expect(fleet.skipped[0]).toMatch(/^ConversionWebhookServer broken: /);
  });

  it('prints the moves, the routes and the shares', () => {
    const fleet = fleetOfFile(FLEET);
    const change = { add: [{ name: 'delta', weight: 1 }], remove: [], reweight: [] };
    const sim = simulate({
      subjects: fleet.configs.map(subjectOf),
      before: fleet.instances,
      after: applyPoolChange(fleet.instances, change),
      fanoutRatePerSecond: 50,
    });
    const text = formatSimulation(sim, change, 50, false);
    expect(text).toContain(`40 targets; ${sim.moves.length} move`);
    expect(text).toMatch(/Targets per instance:\n\s+instance\s+before\s+after\n\s+alpha/);
    for (const m of sim.moves.slice(0, 20)) expect(text).toContain(`${m.target}`);
  });
});
