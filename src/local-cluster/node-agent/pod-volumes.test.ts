import { lstat, mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  localMounts,
  rewriteMountedPath,
  secretVolumeFiles,
  unmetVolume,
  writeAtomically,
} from './pod-volumes.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (data: Record<string, string>): V1Secret => ({
  metadata: { name: 'tls' },
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
});
const secretVolume = (source: V1Volume['secret']): V1Volume => ({ name: 'cert', secret: source });

describe('rewriteMountedPath', () => {
  const mounts = [
    { mountPath: '/etc/app', hostDir: '/pods/p/volumes/app' },
    { mountPath: '/etc/app/certs', hostDir: '/pods/p/volumes/certs' },
  ];

  it('rewrites a path under a mount, in a flag or as the whole value, the longest mount first', () => {
    expect(rewriteMountedPath('--tls-dir=/etc/app/certs', mounts)).toBe('--tls-dir=/pods/p/volumes/certs');
    expect(rewriteMountedPath('/etc/app/conf.yaml', mounts)).toBe('/pods/p/volumes/app/conf.yaml');
    expect(rewriteMountedPath('/etc/app/certs/tls.crt', mounts)).toBe('/pods/p/volumes/certs/tls.crt');
  });

  it('leaves values that are not under a mount alone, at path boundaries only', () => {
    expect(rewriteMountedPath('/etc/apple', mounts)).toBe('/etc/apple');
    expect(rewriteMountedPath('--instance=a', mounts)).toBe('--instance=a');
    expect(rewriteMountedPath('webhook-server', mounts)).toBe('webhook-server');
    expect(rewriteMountedPath('a=b=/etc/app', mounts)).toBe('a=b=/etc/app');
  });
});

describe('localMounts', () => {
  const pod = (mount: object): V1Pod => ({
    spec: { containers: [], volumes: [{ name: 'cert', secret: { secretName: 'tls' } }] },
    metadata: {},
    ...mount,
  });

  it('places each mount under the pod directory', () => {
    const mounts = localMounts(
      pod({}),
      { name: 'c', volumeMounts: [{ name: 'cert', mountPath: '/etc/c/' }] },
      '/p',
    );
    expect(mounts).toEqual([{ mountPath: '/etc/c', hostDir: '/p/volumes/cert' }]);
  });

  it('refuses a mount of an unknown volume and subPath mounts', () => {
    expect(() =>
      localMounts(pod({}), { name: 'c', volumeMounts: [{ name: 'other', mountPath: '/x' }] }, '/p'),
    ).toThrow(/no volume of that name/);
    expect(() =>
      localMounts(
        pod({}),
        { name: 'c', volumeMounts: [{ name: 'cert', mountPath: '/x', subPath: 'a' }] },
        '/p',
      ),
    ).toThrow(/subPath/);
  });
});

describe('Secret volumes', () => {
  it('waits for a missing Secret unless the volume is optional; refuses unsupported kinds', () => {
    expect(unmetVolume(secretVolume({ secretName: 'tls' }), undefined)).toMatch(/secret "tls" not found/);
    expect(unmetVolume(secretVolume({ secretName: 'tls', optional: true }), undefined)).toBeUndefined();
    expect(unmetVolume(secretVolume({ secretName: 'tls' }), secret({}))).toBeUndefined();
    expect(unmetVolume({ name: 'scratch', emptyDir: {} }, undefined)).toBeUndefined();
    expect(unmetVolume({ name: 'cm', configMap: { name: 'x' } }, undefined)).toMatch(
      /only secret and emptyDir/,
    );
  });

  it('projects every key with the default mode, or only the listed items at their paths', () => {
    const s = secret({ 'tls.crt': 'C', 'tls.key': 'K' });
    const all = secretVolumeFiles(secretVolume({ secretName: 'tls', defaultMode: 0o440 }), s);
    expect([...all].map(([p, f]) => [p, f.content.toString(), f.mode])).toEqual([
      ['tls.crt', 'C', 0o440],
      ['tls.key', 'K', 0o440],
    ]);
    const items = secretVolumeFiles(
      secretVolume({ secretName: 'tls', items: [{ key: 'tls.key', path: 'private/key.pem', mode: 0o400 }] }),
      s,
    );
    expect([...items].map(([p, f]) => [p, f.content.toString(), f.mode])).toEqual([
      ['private/key.pem', 'K', 0o400],
    ]);
  });

  it('refuses an item whose key is missing, or whose path leaves the volume', () => {
    const s = secret({ a: '1' });
    expect(() =>
      secretVolumeFiles(secretVolume({ secretName: 'tls', items: [{ key: 'b', path: 'b' }] }), s),
    ).toThrow(/has no key b/);
    expect(() =>
      secretVolumeFiles(secretVolume({ secretName: 'tls', items: [{ key: 'a', path: '../a' }] }), s),
    ).toThrow(/not a relative path/);
  });
});

describe('writeAtomically', () => {
  let dir = '';
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const file = (content: string, mode = 0o440) => ({ content: Buffer.from(content), mode });

  it('swaps a whole version at once: keys are links through ..data, old versions and keys go', async () => {
    dir = await mkdtemp(join(tmpdir(), 'pod-volumes-'));
    await writeAtomically(
      dir,
      new Map([
        ['tls.crt', file('cert-1')],
        ['tls.key', file('key-1')],
        ['old', file('x')],
      ]),
    );
    expect((await lstat(join(dir, 'tls.crt'))).isSymbolicLink()).toBe(true);
    expect(((await stat(join(dir, 'tls.key'))).mode & 0o777).toString(8)).toBe('440');

    await writeAtomically(
      dir,
      new Map([
        ['tls.crt', file('cert-2')],
        ['tls.key', file('key-2')],
      ]),
    );
    expect(await readFile(join(dir, 'tls.crt'), 'utf8')).toBe('cert-2');
    expect(await readFile(join(dir, 'tls.key'), 'utf8')).toBe('key-2');
    const entries = await readdir(dir);
    expect(entries).not.toContain('old');
    expect(entries.filter((e) => e.startsWith('..') && e !== '..data')).toHaveLength(1);
  });

  it('writes nested item paths and an empty Secret', async () => {
    dir = await mkdtemp(join(tmpdir(), 'pod-volumes-'));
    await writeAtomically(dir, new Map([['private/key.pem', file('k')]]));
    expect(await readFile(join(dir, 'private', 'key.pem'), 'utf8')).toBe('k');
    await writeAtomically(dir, new Map());
    expect((await readdir(dir)).filter((e) => !e.startsWith('..'))).toEqual([]);
  });
});
