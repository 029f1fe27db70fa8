// JSON value helpers for the hot conversion path. Objects arrive from JSON.parse, so they are
// plain data: a hand-written copy is both faster than structuredClone and able to skip keys.

export type JsonObject = Record<string, unknown>;

/** Copies of the input's values, or the values themselves when the input is the caller's to give away (convert.ts). */
export type Take = (value: unknown) => unknown;

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

/**
 * Whether two JSON values are equal once every empty object or list held by an object field is
 * taken for an absent field: the engine's (and the reference's) notion of "the same object" for
 * a lossless verdict. Neither engine writes an empty container no value fills (a map with no
 * keys converts to no fields at all), and Kubernetes clients treat the two alike (omitempty).
 */
export function equalUpToEmptyContainers(a: unknown, b: unknown): boolean {
  return deepEqual(withoutEmptyContainers(a), withoutEmptyContainers(b));
}

function withoutEmptyContainers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutEmptyContainers);
  if (!isJsonObject(value)) return value;
  const out: JsonObject = {};
  for (const key of Object.keys(value)) {
    const child = withoutEmptyContainers(value[key]);
    const empty = Array.isArray(child)
      ? child.length === 0
      : isJsonObject(child) && Object.keys(child).length === 0;
    if (!empty) setOwn(out, key, child);
  }
  return out;
}
