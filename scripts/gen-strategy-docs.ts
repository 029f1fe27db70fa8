// Writes docs/strategies.md, the strategy reference, from the worked examples, converted by the
// engine itself. Run after changing a strategy or an example:
//   node scripts/gen-strategy-docs.ts
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderStrategyReference, STRATEGY_REFERENCE_PATH } from '../src/engine/strategy-reference/render.ts';

const path = join(import.meta.dirname, '..', STRATEGY_REFERENCE_PATH);
writeFileSync(path, renderStrategyReference());
console.log(`wrote ${path}`);
