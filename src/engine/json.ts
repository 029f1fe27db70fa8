// JSON value helpers for the hot conversion path. Objects arrive from JSON.parse, so they are
// plain data: a hand-written copy is both faster than structuredClone and able to skip keys.
import type { Segments } from './paths.ts';

export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sets an own property. `__proto__` is a legal JSON key (JSON.parse creates it as an own
 * property), but plain assignment would replace the output's prototype instead.
 */
export function setOwn(target: JsonObject, key: string, value: unknown): void {
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}

export function deepCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) out[i] = deepCopy(value[i]);
    return out;
  }
  const out: JsonObject = {};
  for (const key of Object.keys(value)) setOwn(out, key, deepCopy((value as JsonObject)[key]));
  return out;
}

/** The value at a path, or undefined when any level is absent or not an object. */
export function readPath(root: JsonObject, segments: Segments): unknown {
  let current: unknown = root;
  for (const segment of segments) {
    if (!isJsonObject(current) || !Object.hasOwn(current, segment)) return undefined;
    current = current[segment];
  }
  return current;
}

/**
 * Writes a value, creating missing parent objects. Returns the path of the first parent that
 * exists but is not an object (writing there would destroy a value), or undefined on success.
 */
export function writePath(root: JsonObject, segments: Segments, value: unknown): Segments | undefined {
  let current = root;
  const last = segments.length - 1;
  for (let i = 0; i < last; i++) {
    const segment = segments[i] as string;
    if (!Object.hasOwn(current, segment)) setOwn(current, segment, {});
    const next = current[segment];
    if (!isJsonObject(next)) return segments.slice(0, i + 1);
    current = next;
  }
  setOwn(current, segments[last] as string, value);
  return undefined;
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  }
  const aKeys = Object.keys(a);
  const bObject = b as JsonObject;
  if (aKeys.length !== Object.keys(bObject).length) return false;
  return aKeys.every((key) => Object.hasOwn(bObject, key) && deepEqual((a as JsonObject)[key], bObject[key]));
}
