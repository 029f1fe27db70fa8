// The NATS minimum is a constant in topology.ts; every place a person reads it (README, docs/,
// deploy/ comments) must say the same version, or an operator runs a server the workers refuse.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIN_SERVER_VERSION } from './topology.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

function filesUnder(dir: string, ext: RegExp): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(ROOT, path)).isDirectory()) return filesUnder(path, ext);
    return ext.test(name) ? [path] : [];
  });
}

/** "nats-server 2.12.9 or newer", "a NATS JetStream you run (2.10 or later", "NATS 2.10+". */
const STATED_MINIMUM =
  /\b(?:NATS|nats-server)\b[^.]{0,60}?\b(\d+\.\d+(?:\.\d+)?)(?:\+| or (?:later|newer))/gi;

function statedMinimums(text: string): string[] {
  return [...text.replace(/\n#?\s*/g, ' ').matchAll(STATED_MINIMUM)].map((m) => m[1] as string);
}

describe('the NATS server minimum', () => {
  it('finds a stated minimum however it is phrased', () => {
    expect(statedMinimums('a NATS JetStream you run (2.10 or\n# later; tested)')).toEqual(['2.10']);
    expect(statedMinimums('needs nats-server **2.12.9 or newer**')).toEqual(['2.12.9']);
    expect(statedMinimums('Requires NATS 2.11+.')).toEqual(['2.11']);
  });

  it('is the version the workers check, wherever README, docs/ and deploy/ state one', () => {
    const files = ['README.md', ...filesUnder('docs', /\.md$/), ...filesUnder('deploy', /\.ya?ml$/)];
    const stated = files.flatMap((file) =>
      statedMinimums(readFileSync(join(ROOT, file), 'utf8')).map((version) => ({ file, version })),
    );
    expect(stated.length, 'the README and docs/bus.md state it at least').toBeGreaterThanOrEqual(2);
    expect(stated.filter((s) => s.version !== MIN_SERVER_VERSION)).toEqual([]);
  });
});
