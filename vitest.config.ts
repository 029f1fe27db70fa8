import { defineConfig } from 'vitest/config';

// Three projects: fast pure-logic tests that sit beside the code (`*.test.ts`), the differential
// suite against the reference operator's engine (test/reference-engine), and tests against the
// real local stack (`*.itest.ts` in src/ and test/, which share one local
// cluster, and test/e2e's `*.e2e.ts` and test/chaos's `*.chaos.ts`, which each start a cluster
// of their own and install Switchyard from deploy/). Files run one at a time: the machine has two cores, and the control
// plane needs them.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          environment: 'node',
          // Property tests run thousands of cases; on a loaded two-core machine one took 5.1 s
          // against vitest's 5 s default. A hung test still fails, at 30 s.
          testTimeout: 30_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: [
            'src/**/*.itest.ts',
            'test/*.itest.ts',
            'test/e2e/**/*.e2e.ts',
            'test/chaos/**/*.chaos.ts',
          ],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          fileParallelism: false,
        },
      },
      {
        // The reference conversion operator's engine, built from its pinned source
        // (scripts/lib/build-reference.sh), side by side with Switchyard's: no cluster needed.
        test: {
          name: 'reference',
          include: ['test/reference-engine/**/*.itest.ts'],
          environment: 'node',
          testTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
