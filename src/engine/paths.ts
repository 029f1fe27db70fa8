// Field paths. Rules name fields with dotted paths from the object root (`spec.size`), the
// same grammar the reference operator's users already write. Internally a path is its list of
// segments, parsed once at compile time so conversion never splits strings.

/** A parsed field path: one property name per level, from the object root. */
export type Segments = readonly string[];

// The engine owns these: apiVersion is rewritten, kind and metadata are carried over verbatim.
const ENGINE_OWNED_ROOTS = new Set(['apiVersion', 'kind', 'metadata']);

export type ParsedPath = { ok: true; segments: Segments } | { ok: false; problem: string };

/**
 * Parses a dotted path; array indexing and empty segments are rejected, not guessed at. From an
 * object's root (`fromRoot`), the fields the engine owns are rejected too; an array element (a
 * ForEach's) has none.
 */
export function parsePath(path: string, fromRoot = true): ParsedPath {
  const segments = path.split('.');
  let indexes = false;
  for (const segment of segments) {
    if (segment.length === 0) return { ok: false, problem: `"${path}" has an empty segment` };
    indexes ||= segment.includes('[') || segment.includes(']');
  }
  if (indexes) {
    return { ok: false, problem: `"${path}" indexes into an array; rules apply to whole arrays` };
  }
  if (fromRoot && ENGINE_OWNED_ROOTS.has(segments[0] ?? '')) {
    return { ok: false, problem: `"${path}" is under ${segments[0]}, which the engine owns` };
  }
  return { ok: true, segments };
}

/**
 * `parent` with `name` appended, in an array of exactly that length: a plan keeps its paths for
 * as long as it is held, so no spare capacity (a spread may leave some), and a copy by hand is
 * several times faster than `concat`, which a replica's start calls for every schema node.
 */
export function childSegments(parent: Segments, name: string): Segments {
  const out = new Array<string>(parent.length + 1);
  for (let i = 0; i < parent.length; i++) out[i] = parent[i] as string;
  out[parent.length] = name;
  return out;
}

export function joinPath(segments: Segments): string {
  return segments.join('.');
}

/** Whether `prefix` is `path` or one of its ancestors. */
export function isPrefixOf(prefix: Segments, path: Segments): boolean {
  if (prefix.length > path.length) return false;
  for (let i = 0; i < prefix.length; i++) {
    if (prefix[i] !== path[i]) return false;
  }
  return true;
}

/** Two paths overlap when writing one would also write the other. */
export function overlaps(a: Segments, b: Segments): boolean {
  return isPrefixOf(a, b) || isPrefixOf(b, a);
}
