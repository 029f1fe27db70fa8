// Reading and writing a field by its segments, for the strategies whose conversion is code of
// their own (`run` ops, plan.ts). The generated ops inline the same logic (step-function.ts).
//
// A write goes into the output, where every object on a claimed path is one the step created
// (the omit tree copies it), so it is written in place. `metadata` is not on any claimed path:
// the output shares it with the input when the input is the caller's to give away, so a write
// there copies the levels it changes (`writeMetadataEntry`; the stash's removal, strategies/metadata-stash.ts).
import { isJsonObject, type JsonObject, setOwn } from './json.ts';
import { joinPath, type Segments } from './paths.ts';
import type { OpFailure } from './plan.ts';

/** The value at `segments`, or undefined when any level is absent or not an object. */
export function readField(object: unknown, segments: Segments): unknown {
  let value = object;
  for (let i = 0; i < segments.length; i++) {
    if (!isJsonObject(value)) return undefined;
    const key = segments[i] as string;
    value = Object.hasOwn(value, key) ? value[key] : undefined;
  }
  return value;
}

/** Writes `value` at `segments`, creating missing (or null) parents; a parent that is another value fails. */
export function writeField(output: JsonObject, segments: Segments, value: unknown): OpFailure | undefined {
  let parent = output;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i] as string;
    if (!Object.hasOwn(parent, key) || parent[key] === undefined || parent[key] === null)
      setOwn(parent, key, {});
    const next = parent[key];
    if (!isJsonObject(next)) {
      return {
        message: `cannot write ${joinPath(segments)}: ${joinPath(segments.slice(0, i + 1))} holds a value that is not an object`,
        path: joinPath(segments),
      };
    }
    parent = next;
  }
  setOwn(parent, segments[segments.length - 1] as string, value);
  return undefined;
}

export type MetadataMap = 'annotations' | 'labels';

/** Sets `metadata.<map>.<key>` in the output, copying the levels it changes. */
export function writeMetadataEntry(output: JsonObject, map: MetadataMap, key: string, value: string): void {
  const metadata = isJsonObject(output.metadata) ? { ...output.metadata } : {};
  const entries = isJsonObject(metadata[map]) ? { ...(metadata[map] as JsonObject) } : {};
  setOwn(entries, key, value);
  metadata[map] = entries;
  output.metadata = metadata;
}
