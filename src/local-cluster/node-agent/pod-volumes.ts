// A pod's volumes as the local node agent provides them. There is no mount namespace here: a
// pod's process sees the host's filesystem, so each volume lives in the pod's directory and
// every container argument or environment value that names a path under a volume's mountPath is
// rewritten to that directory, as the container would have seen the path mounted. Supported:
// `secret` (with items, modes and optional), `emptyDir`, and the ServiceAccount volume the
// apiserver adds to every pod (its token reaches the process as KUBECONFIG instead, so the volume
// stays empty); anything else stops the pod with a message naming the volume.
//
// A Secret volume is written as kubelet's atomic writer writes it: the files of one version in a
// timestamped directory, `..data` a symlink to it swapped with one rename, and each key a symlink
// through `..data`. A reader that opens tls.crt and tls.key while the Secret changes sees both
// from one version, never a certificate with the previous key.
import { chmod, mkdir, readdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { V1Container, V1Pod, V1Secret, V1Volume } from '@kubernetes/client-node';

const DATA_LINK = '..data';
/** kubelet's default for a Secret volume's files. */
const DEFAULT_SECRET_MODE = 0o644;

export interface LocalMount {
  mountPath: string;
  hostDir: string;
}

/** Where each of the container's mounts lives on the host; fails on what cannot be mounted here. */
export function localMounts(pod: V1Pod, container: V1Container, podDir: string): LocalMount[] {
  const volumes = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
  return (container.volumeMounts ?? []).map((m) => {
    if (!volumes.has(m.name)) throw new Error(`volumeMount ${m.name}: the pod has no volume of that name`);
    if (m.subPath || m.subPathExpr)
      throw new Error(`volumeMount ${m.name}: subPath is not supported by the local node agent`);
    return { mountPath: m.mountPath.replace(/\/+$/, ''), hostDir: volumeDir(podDir, m.name) };
  });
}

export function volumeDir(podDir: string, volume: string): string {
  return join(podDir, 'volumes', volume);
}

/**
 * The value with a path under a mount rewritten to the mount's host directory: the whole value,
 * or what follows `=` in a flag (`--tls-dir=/etc/x`). The longest mountPath wins, and only at a
 * path boundary (`/etc/x` does not match `/etc/xy`).
 */
export function rewriteMountedPath(value: string, mounts: readonly LocalMount[]): string {
  const eq = value.indexOf('=');
  const [prefix, path] =
    value.startsWith('/') || eq < 0 ? ['', value] : [value.slice(0, eq + 1), value.slice(eq + 1)];
  const mount = [...mounts]
    .sort((a, b) => b.mountPath.length - a.mountPath.length)
    .find((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`));
  return mount === undefined ? value : prefix + mount.hostDir + path.slice(mount.mountPath.length);
}

/** The Secret a volume projects, if it is a Secret volume. */
export function secretNameOf(volume: V1Volume): string | undefined {
  return volume.secret?.secretName;
}

/**
 * The projected volume the ServiceAccount admission plugin adds (`kube-api-access-*`: a token,
 * the cluster CA, the namespace). The agent gives the process a kubeconfig for the same
 * ServiceAccount instead.
 */
export function isServiceAccountVolume(volume: V1Volume): boolean {
  const sources = volume.projected?.sources ?? [];
  return (
    sources.some((s) => s.serviceAccountToken !== undefined) &&
    sources.every(
      (s) => s.serviceAccountToken !== undefined || s.configMap !== undefined || s.downwardAPI !== undefined,
    )
  );
}

/** Why a volume cannot be set up now (a missing Secret), or undefined when it can. */
export function unmetVolume(volume: V1Volume, secret: V1Secret | undefined): string | undefined {
  if (volume.emptyDir !== undefined || isServiceAccountVolume(volume)) return undefined;
  if (volume.secret === undefined)
    return `volume ${volume.name}: only secret and emptyDir volumes are supported by the local node agent`;
  if (secret === undefined && volume.secret.optional !== true)
    return `MountVolume.SetUp failed for volume "${volume.name}": secret "${volume.secret.secretName}" not found`;
  return undefined;
}

/** The files a Secret volume holds: key or item path → content and mode. */
export function secretVolumeFiles(
  volume: V1Volume,
  secret: V1Secret | undefined,
): Map<string, { content: Buffer; mode: number }> {
  const source = volume.secret ?? {};
  const data = secret?.data ?? {};
  const mode = source.defaultMode ?? DEFAULT_SECRET_MODE;
  const files = new Map<string, { content: Buffer; mode: number }>();
  const items = source.items ?? Object.keys(data).map((key) => ({ key, path: key, mode: undefined }));
  for (const item of items) {
    const value = data[item.key];
    if (value === undefined) {
      if (source.optional === true) continue;
      throw new Error(`volume ${volume.name}: secret ${source.secretName} has no key ${item.key}`);
    }
    if (item.path.split('/').some((part) => part === '..' || part === '') || item.path.startsWith('..'))
      throw new Error(`volume ${volume.name}: item path ${item.path} is not a relative path`);
    files.set(item.path, { content: Buffer.from(value, 'base64'), mode: item.mode ?? mode });
  }
  return files;
}

/** Creates or replaces a volume's content in one atomic step (see the file's header). */
export async function writeAtomically(
  dir: string,
  files: ReadonlyMap<string, { content: Buffer; mode: number }>,
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const version = `..${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  await mkdir(join(dir, version));
  for (const [path, { content, mode }] of files) {
    const file = join(dir, version, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, content);
    await chmod(file, mode);
  }
  const previous = await readlink(join(dir, DATA_LINK)).catch(() => undefined);
  const staged = join(dir, `${DATA_LINK}_tmp`);
  await rm(staged, { force: true });
  await symlink(version, staged);
  await rename(staged, join(dir, DATA_LINK));
  const visible = new Set([...files.keys()].map((path) => path.split('/')[0] as string));
  for (const name of visible) {
    await symlink(join(DATA_LINK, name), join(dir, name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
  }
  for (const entry of await readdir(dir)) {
    if (!entry.startsWith('..') && !visible.has(entry)) await rm(join(dir, entry), { force: true });
  }
  if (previous !== undefined && previous !== version)
    await rm(join(dir, previous), { recursive: true, force: true });
}
