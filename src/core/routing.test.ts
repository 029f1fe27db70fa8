import { describe, expect, it } from 'vitest';
import {
  generatedCrdNames,
  notEstablished,
  routeStatesOf,
  servicesNamingTarget,
  xrdOfGeneratedCrd,
} from './routing.ts';

const conversion = (service: string, caBundle = 'Q0E=') => ({
  strategy: 'Webhook',
  webhook: {
    clientConfig: {
      service: { name: service, namespace: 'ns', path: '/convert/xw.x.io', port: 443 },
      caBundle,
    },
    conversionReviewVersions: ['v1'],
  },
});
const ESTABLISHED = { conditions: [{ type: 'Established', status: 'True' }] };
const xrd = (claim = true, service = 'b-webhook-server') => ({
  metadata: { name: 'xw.x.io' },
  spec: {
    group: 'x.io',
    ...(claim && { claimNames: { plural: 'ws', kind: 'W' } }),
    conversion: conversion(service),
  },
  status: ESTABLISHED,
});
const crd = (name: string, service: string, caBundle?: string) => ({
  metadata: { name },
  spec: { conversion: conversion(service, caBundle) },
  status: ESTABLISHED,
});

describe('the CRDs an XRD target routes by', () => {
  it('are its composite CRD, named as the XRD, and its claim CRD where it offers a claim', () => {
    expect(generatedCrdNames(xrd())).toEqual(['xw.x.io', 'ws.x.io']);
    expect(generatedCrdNames(xrd(false))).toEqual(['xw.x.io']);
  });

  it('agree with the XRD only when they say exactly what it says, CA bundle included', () => {
    const crds = new Map<string, unknown>([
      ['xw.x.io', crd('xw.x.io', 'b-webhook-server')],
      ['ws.x.io', crd('ws.x.io', 'b-webhook-server', 'T0xE')],
    ]);
    expect(routeStatesOf(xrd(), (n) => crds.get(n))).toEqual([
      { crd: 'xw.x.io', exists: true, established: true, serviceName: 'b-webhook-server', agrees: true },
      { crd: 'ws.x.io', exists: true, established: true, serviceName: 'b-webhook-server', agrees: false },
    ]);
    expect(routeStatesOf(xrd(), () => undefined).map((r) => [r.exists, r.agrees])).toEqual([
      [false, false],
      [false, false],
    ]);
  });

  it('a first apply waits for the XRD, then for each generated CRD to exist and be Established', () => {
    const target = { kind: 'CompositeResourceDefinition', name: 'xw.x.io' };
    const none = routeStatesOf(xrd(), () => undefined);
    expect(notEstablished({ ...target, live: { ...xrd(), status: {} } }, none)).toBe(
      'CompositeResourceDefinition xw.x.io is not Established yet',
    );
    expect(notEstablished({ ...target, live: xrd() }, none)).toBe(
      'Crossplane has not generated CRDs xw.x.io, ws.x.io yet',
    );
    const unready = routeStatesOf(xrd(), (n) => ({ ...crd(n, 'b-webhook-server'), status: {} }));
    expect(notEstablished({ ...target, live: xrd() }, unready)).toBe(
      'the generated CRDs xw.x.io, ws.x.io are not Established yet',
    );
    const ready = routeStatesOf(xrd(), (n) => crd(n, 'b-webhook-server'));
    expect(notEstablished({ ...target, live: xrd() }, ready)).toBeUndefined();
  });

  it('every Service any of them names counts, once, sorted', () => {
    expect(servicesNamingTarget('b-webhook-server', ['a-webhook-server', 'b-webhook-server'])).toEqual([
      'a-webhook-server',
      'b-webhook-server',
    ]);
    expect(servicesNamingTarget(undefined)).toEqual([]);
    expect(servicesNamingTarget('a-webhook-server', ['a-webhook-server'])).toEqual(['a-webhook-server']);
    expect(servicesNamingTarget('a-webhook-server'), 'one shared list per Service').toBe(
      servicesNamingTarget('a-webhook-server'),
    );
  });

  it('a generated CRD names its XRD through its controller owner reference', () => {
    const owned = (kind: string, controller: boolean) => ({
      metadata: {
        ownerReferences: [
          { apiVersion: 'apiextensions.crossplane.io/v1', kind, name: 'xw.x.io', controller },
        ],
      },
    });
    expect(xrdOfGeneratedCrd(owned('CompositeResourceDefinition', true))).toBe('xw.x.io');
    expect(xrdOfGeneratedCrd(owned('CompositeResourceDefinition', false))).toBeUndefined();
    expect(xrdOfGeneratedCrd(owned('Deployment', true))).toBeUndefined();
  });
});
