import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STRATEGY_EXAMPLES } from './examples.ts';
import { renderStrategyReference, STRATEGY_REFERENCE_PATH } from './render.ts';

describe('docs/strategies.md', () => {
  it('is what the engine does with the examples now', () => {
    const committed = readFileSync(
      join(import.meta.dirname, '..', '..', '..', STRATEGY_REFERENCE_PATH),
      'utf8',
    );
    expect(
      committed,
      `${STRATEGY_REFERENCE_PATH} drifted from the engine: run \`node scripts/gen-strategy-docs.ts\``,
    ).toBe(renderStrategyReference());
  });

  it('has one example per strategy, each converting without an error both ways', () => {
    const rendered = renderStrategyReference();
    expect(rendered).not.toContain('error:');
    expect(new Set(STRATEGY_EXAMPLES.map((e) => e.strategy)).size).toBe(STRATEGY_EXAMPLES.length);
  });
});
