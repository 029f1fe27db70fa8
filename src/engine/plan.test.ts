import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EnumValue } from '../api/rules.ts';
import { enumTable, remappedValue } from './plan.ts';

const enumValueArb: fc.Arbitrary<EnumValue> = fc.oneof(
  fc.constantFrom('1', 'true', 'null', '', 'x'),
  fc.constantFrom(1, 0, -0, 2.5),
  fc.boolean(),
);

describe('an enum table', () => {
  it('maps every value as a Map of the same pairs does: by type and value, 1 never "1"', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(enumValueArb, enumValueArb), { selector: ([from]) => from, maxLength: 6 }),
        fc.oneof(enumValueArb, fc.constant(undefined), fc.constant({}), fc.constant(null)),
        (pairs, probe) => {
          const map = new Map(pairs);
          expect(remappedValue(enumTable(map), probe)).toBe(map.get(probe as EnumValue));
        },
      ),
    );
  });
});
