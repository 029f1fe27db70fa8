// The image instances run: the project's own, the one the instances handler itself runs (its
// Deployment passes it in SWITCHYARD_IMAGE), so a control-plane upgrade rolls the replicas to
// the same release. spec.image overrides parts of it per instance (core/instances/render.ts).
import type { ImageRef } from '../../core/instances/render.ts';

const IMAGE_ENV = 'SWITCHYARD_IMAGE';
const DEFAULT_IMAGE = 'switchyard:dev';

/** `repository[:tag][@digest]`; the tag's colon is the last one after the last slash (a registry port has one too). */
export function parseImage(text: string): ImageRef {
  const [named = '', digest] = text.split('@', 2);
  const colon = named.lastIndexOf(':');
  const hasTag = colon > named.lastIndexOf('/');
  return {
    repository: hasTag ? named.slice(0, colon) : named,
    ...(hasTag && { tag: named.slice(colon + 1) }),
    ...(digest !== undefined && { digest }),
  };
}

export function projectImage(): ImageRef {
  return parseImage(process.env[IMAGE_ENV] || DEFAULT_IMAGE);
}
