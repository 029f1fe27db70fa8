import { describe, expect, it } from 'vitest';
import {
  type ConfigVersion,
  type CrdVersion,
  falseClaims,
  type HandoverClaim,
  type ServiceRef,
} from './handover-claims.ts';

const TARGET = 'widgets.example.com';
const serviceOf = (instance: string): ServiceRef => ({ name: `${instance}-webhook-server`, namespace: 'ns' });

const pending: HandoverClaim = { status: 'False', reason: 'HandoverPending', message: 'waiting' };
const changed: HandoverClaim = { status: 'False', reason: 'AssignmentChanged', message: 'assigned' };
const verified = (reason = 'HandoverReady', at = 't1'): HandoverClaim => ({
  status: 'True',
  reason,
  message: `verified ${reason}`,
  lastTransitionTime: at,
});
const missing: HandoverClaim = { status: 'False', reason: 'TargetNotFound', message: 'gone' };

function config(
  revision: number,
  fields: { assigned?: string; destination?: string; condition?: HandoverClaim; uid?: string },
): ConfigVersion {
  return {
    revision: BigInt(revision),
    deleted: false,
    name: 'c',
    uid: fields.uid ?? 'u1',
    target: TARGET,
    ...fields,
  };
}

function crd(
  revision: number,
  instance: string | undefined,
  opts: { uid?: string; deleted?: boolean } = {},
): CrdVersion {
  return {
    revision: BigInt(revision),
    deleted: opts.deleted ?? false,
    name: TARGET,
    uid: opts.uid ?? 'crd1',
    service: instance === undefined ? undefined : serviceOf(instance),
  };
}

describe('the continuous check of HandoverReady claims', () => {
  it('accepts a verified move once the CRD names the destination, and a wait before it', () => {
    const configs = [
      config(10, {}),
      config(12, { assigned: 'b', destination: 'b', condition: changed }),
      config(14, { assigned: 'b', destination: 'b', condition: pending }),
      config(21, { assigned: 'b', destination: 'b', condition: verified() }),
    ];
    const crds = [crd(5, 'a'), crd(20, 'b')];
    expect(falseClaims(configs, crds, serviceOf)).toEqual([]);
  });

  it('flags a True verdict about one instance beside an assignment of another: the status says two things', () => {
    const configs = [config(10, {}), config(12, { assigned: 'b', destination: 'a', condition: verified() })];
    expect(falseClaims(configs, [crd(5, 'a')], serviceOf)).toEqual([
      expect.objectContaining({
        revision: 12n,
        what: expect.stringMatching(/about a while the status assigns b/),
      }),
    ]);
  });

  it('flags a verdict stored before the repoint it claims: the CRD still names the source', () => {
    const configs = [
      config(10, {}),
      config(12, { assigned: 'b', destination: 'b', condition: changed }),
      config(20, { assigned: 'b', destination: 'b', condition: verified() }),
    ];
    expect(falseClaims(configs, [crd(5, 'a'), crd(21, 'b')], serviceOf)).toEqual([
      expect.objectContaining({
        revision: 20n,
        what: expect.stringMatching(/names Service ns\/a-webhook-server/),
      }),
    ]);
  });

  it('excuses a verdict made stale by the user deleting the CRD, for as long as it stands', () => {
    const configs = [
      config(10, {}),
      config(12, { assigned: 'a', destination: 'a', condition: verified('FirstApply') }),
      // Another manager's write (the phase) carries the same condition after the deletion.
      config(25, { assigned: 'a', destination: 'a', condition: verified('FirstApply') }),
      config(30, { assigned: 'a', destination: 'a', condition: missing }),
    ];
    const crds = [crd(11, 'a'), crd(20, 'a', { deleted: true }), crd(22, undefined, { uid: 'crd2' })];
    expect(falseClaims(configs, crds, serviceOf)).toEqual([]);
  });

  it('excuses a verdict stored after a deletion that came between the repoint and the status write', () => {
    const configs = [
      config(10, {}),
      config(12, { assigned: 'b', destination: 'b', condition: changed }),
      config(30, { assigned: 'b', destination: 'b', condition: verified() }),
    ];
    const crds = [
      crd(5, 'a'),
      crd(20, 'b'),
      crd(25, 'b', { deleted: true }),
      crd(27, undefined, { uid: 'crd2' }),
    ];
    expect(falseClaims(configs, crds, serviceOf)).toEqual([]);
  });

  it('flags a first apply claimed about a new incarnation that was never pointed anywhere', () => {
    const configs = [
      config(10, {}),
      config(12, { assigned: 'a', destination: 'a', condition: verified('FirstApply', 't1') }),
      config(30, { assigned: 'a', destination: 'a', condition: missing }),
      config(40, { assigned: 'a', destination: 'a', condition: verified('FirstApply', 't2') }),
    ];
    const crds = [crd(11, 'a'), crd(20, 'a', { deleted: true }), crd(35, undefined, { uid: 'crd2' })];
    expect(falseClaims(configs, crds, serviceOf)).toEqual([
      expect.objectContaining({
        revision: 40n,
        what: expect.stringMatching(/\(uid crd2\) names no Service/),
      }),
    ]);
  });

  it('judges each incarnation of a config on its own, and ignores deletions of the config', () => {
    const configs = [
      config(10, { uid: 'u1' }),
      config(12, { uid: 'u1', assigned: 'a', destination: 'a', condition: verified() }),
      { ...config(15, { uid: 'u1', assigned: 'a', destination: 'a', condition: verified() }), deleted: true },
      config(16, { uid: 'u2' }),
      config(18, { uid: 'u2', assigned: 'b', destination: 'b', condition: verified('NoMove') }),
    ];
    expect(falseClaims(configs, [crd(11, 'a'), crd(17, 'b')], serviceOf)).toEqual([]);
    expect(falseClaims(configs, [crd(11, 'a')], serviceOf)).toEqual([
      expect.objectContaining({ uid: 'u2', revision: 18n }),
    ]);
  });
});
