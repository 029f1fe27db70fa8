import { describe, expect, it } from 'vitest';
import { type DiscoveryRead, decideXrdRecording, type XrdRecording } from './xrd-api.ts';

const served = (...servedAt: string[]): DiscoveryRead => ({
  ok: true,
  value: { servedAt, definitionGone: false },
});
const definitionStill: DiscoveryRead = { ok: true, value: { servedAt: [], definitionGone: false } };
const gone: DiscoveryRead = { ok: true, value: { servedAt: [], definitionGone: true } };
const failed: DiscoveryRead = { ok: false, error: new Error('connect ECONNREFUSED') };

describe('deciding which XRD API the watchers record', () => {
  it('starts recording when Crossplane appears, at v2 where it is served, else at v1', () => {
    expect(decideXrdRecording(served('v1'), 'idle')).toEqual({ step: 'watch', version: 'v1' });
    expect(decideXrdRecording(served('v1', 'v2'), 'idle')).toEqual({ step: 'watch', version: 'v2' });
    expect(decideXrdRecording(served('v2'), 'retired')).toEqual({ step: 'watch', version: 'v2' });
  });

  it('replaces the watcher when an upgrade or a downgrade changes the newest version served', () => {
    expect(decideXrdRecording(served('v1', 'v2'), 'v1')).toEqual({
      step: 'watch',
      version: 'v2',
      replacing: 'v1',
    });
    expect(decideXrdRecording(served('v1'), 'v2')).toEqual({ step: 'watch', version: 'v1', replacing: 'v2' });
  });

  it('leaves a watcher at the version still preferred alone: a restart would relist for nothing', () => {
    expect(decideXrdRecording(served('v2', 'v1'), 'v2')).toEqual({ step: 'keep' });
    expect(decideXrdRecording(served('v1'), 'v1')).toEqual({ step: 'keep' });
  });

  it('ignores versions of the group that serve no XRDs (compositions alone, an older API)', () => {
    expect(decideXrdRecording(served('v1beta1'), 'idle')).toEqual({ step: 'keep' });
    expect(decideXrdRecording(served('v1beta1', 'v1'), 'idle')).toEqual({ step: 'watch', version: 'v1' });
  });

  it('keeps whatever runs when discovery cannot be read: an apiserver briefly down stops no recording', () => {
    for (const recording of ['v2', 'v1', 'idle', 'retired'] as XrdRecording[])
      expect(decideXrdRecording(failed, recording)).toEqual({ step: 'keep' });
  });

  it('stops the watcher and records every XRD as deleted once the API and its CRD are gone', () => {
    expect(decideXrdRecording(gone, 'v2')).toEqual({ step: 'retire', stopping: 'v2' });
  });

  it('clears XRD records left from before at start, when Crossplane was removed while no watcher ran', () => {
    expect(decideXrdRecording(gone, 'idle')).toEqual({ step: 'retire' });
  });

  it('retires once: later reads of an absent API change nothing', () => {
    expect(decideXrdRecording(gone, 'retired')).toEqual({ step: 'keep' });
  });

  it('keeps the watcher and the records while the CRD still exists though discovery omits the group', () => {
    // Being deleted (its objects go one by one, and the watch records each), its versions not
    // served, or discovery briefly incomplete: a deletion recorded now could not be taken back.
    expect(decideXrdRecording(definitionStill, 'v1')).toEqual({ step: 'keep' });
    expect(decideXrdRecording(definitionStill, 'idle')).toEqual({ step: 'keep' });
  });
});
