// Any JSON value, as a field of the API (a rule's Constant value, a condition's `equals`, a
// Pod's affinity). `z.json()` says the same, but recursively (a lazy union), and a recursive
// schema anywhere inside a config keeps zod from compiling the config's parser ahead of time
// (`z.compile`, used by views/view-reads.ts): every config would be read by the slower runtime
// walk. So the check is one function, held to `z.json()` by a property test.
import { z } from 'zod';

type JsonValue = z.core.util.JSONType;

/** What `z.json()` accepts: strings, finite numbers, booleans, null, and arrays and plain objects of them. */
export function isJsonValue(value: unknown): value is JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      if (value === null) return true;
      if (Array.isArray(value)) return value.every(isJsonValue);
      return isPlainObject(value) && Object.values(value).every(isJsonValue);
    default:
      return false;
  }
}

/** An object built as a literal or by JSON.parse, not an instance of a class (a Date, a Map). */
function isPlainObject(value: object): boolean {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

export function jsonValueSchema() {
  return z.custom<JsonValue>(isJsonValue, {
    error: 'expected a JSON value: a string, a finite number, a boolean, null, or an array or object of them',
  });
}
