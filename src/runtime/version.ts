// The release a process runs: the version in package.json (beside src/ in the image too), read
// once. Kept apart from the metrics so `switchyard --version` loads nothing else.
import { readFileSync } from 'node:fs';

let version: string | undefined;

export function projectVersion(): string {
  version ??= (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  ).version;
  return version;
}
