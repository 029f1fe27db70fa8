// What the apiserver routes a target's conversions by (BRIEF §6). A CRD target routes by itself. A
// Crossplane XRD does not: the apiserver never reads an XRD. Crossplane's XRD controller copies the
// XRD's spec.conversion into the CRDs it generates from it, asynchronously, at its own pace and
// only while it runs: the composite resource's CRD (named as the XRD) and, for an XRD that offers
// a claim (spec.claimNames), the claim's (`<claimNames.plural>.<spec.group>`). So the handover
// writes the XRD, but what verifies a move, what a source keeps its plan for and what keeps an
// instance in use are those generated CRDs: until Crossplane has copied a move into every one of
// them, the apiserver still sends the target's conversions to the source.
//
// Pure: the callers hand in the recorded objects.
import { KINDS } from '../api/resources.ts';
import { liveConversionOf, sameConversion } from './target-conversion.ts';

interface Definition {
  metadata?: { name?: string };
  spec?: { group?: string; claimNames?: { plural?: string } };
  status?: { conditions?: ReadonlyArray<{ type?: string; status?: string }> };
}

/** The names of the CRDs Crossplane generates from an XRD: its composite's, then its claim's if it offers one. */
export function generatedCrdNames(xrd: unknown): string[] {
  const { metadata, spec } = (xrd ?? {}) as Definition;
  const names = metadata?.name ? [metadata.name] : [];
  const claimPlural = spec?.claimNames?.plural;
  if (claimPlural && spec?.group) names.push(`${claimPlural}.${spec.group}`);
  return names;
}

/** A CustomResourceDefinition or an XRD says `Established=True`: the apiserver serves what it defines. */
export function isEstablished(definition: unknown): boolean {
  const conditions = (definition as Definition | undefined)?.status?.conditions ?? [];
  return conditions.some((c) => c.type === 'Established' && c.status === 'True');
}

/** A CRD the apiserver routes an XRD target's conversions by, as recorded. */
export interface RouteState {
  crd: string;
  /** Absent: Crossplane has not generated it (yet), or it was removed. */
  exists: boolean;
  established: boolean;
  /** The Service its conversion webhook names; undefined when it names none. */
  serviceName: string | undefined;
  /** Its spec.conversion says exactly what the target's does (Service, path, port, CA bundle, review versions). */
  agrees: boolean;
}

/**
 * Each CRD an XRD target routes by, compared with the XRD's own conversion. `crdNamed` reads a
 * recorded CRD by name (undefined when there is none).
 */
export function routeStatesOf(xrd: unknown, crdNamed: (name: string) => unknown): RouteState[] {
  const own = liveConversionOf(xrd);
  return generatedCrdNames(xrd).map((crd) => {
    const live = crdNamed(crd);
    const conversion = liveConversionOf(live);
    return {
      crd,
      exists: live !== undefined,
      established: live !== undefined && isEstablished(live),
      serviceName: conversion?.webhook?.clientConfig?.service?.name,
      agrees: live !== undefined && sameConversion(conversion, own),
    };
  });
}

/**
 * Why a first apply must wait, or undefined when it need not: the target is Established and, for
 * an XRD, so is every CRD generated from it (the reference operator checks `Established` too).
 */
export function notEstablished(
  target: { kind: string; name: string; live: unknown },
  routes: readonly RouteState[] | undefined,
): string | undefined {
  if (!isEstablished(target.live)) return `${target.kind} ${target.name} is not Established yet`;
  const missing = (routes ?? []).filter((r) => !r.exists).map((r) => r.crd);
  if (missing.length > 0) return `Crossplane has not generated ${crdsNamed(missing)} yet`;
  const unready = (routes ?? []).filter((r) => !r.established).map((r) => r.crd);
  if (unready.length > 0)
    return `the generated ${crdsNamed(unready)} ${unready.length === 1 ? 'is' : 'are'} not Established yet`;
  return undefined;
}

/** What the routes that do not follow the target say, one clause each, for a condition's message. */
export function describeLaggingRoutes(routes: readonly RouteState[]): string {
  return routes
    .filter((r) => !r.agrees)
    .map((r) =>
      !r.exists
        ? `CRD ${r.crd} does not exist`
        : r.serviceName === undefined
          ? `CRD ${r.crd} names no Service`
          : `CRD ${r.crd} names Service ${r.serviceName}`,
    )
    .join('; ');
}

/**
 * The Service names a target's conversions may go to now: its own and, for an XRD, those the
 * generated CRDs name (`routedServices`). Sorted, once each.
 */
export function servicesNamingTarget(
  ownServiceName: string | undefined,
  routedServices: readonly string[] = NO_SERVICES,
): readonly string[] {
  if (routedServices.length === 0)
    return ownServiceName === undefined ? NO_SERVICES : onlyService(ownServiceName);
  const names = new Set(routedServices);
  if (ownServiceName !== undefined) names.add(ownServiceName);
  if (names.size > 1) return [...names].sort();
  return onlyService(names.values().next().value as string);
}

const NO_SERVICES: readonly string[] = Object.freeze([]);
const singleServices = new Map<string, readonly string[]>();

/**
 * One list per Service name, shared: nearly every target names one Service, of a handful, and a
 * list per target of 50,000 cost 4.6 MiB and most of the time (bench/target-services.ts).
 */
function onlyService(name: string): readonly string[] {
  let list = singleServices.get(name);
  if (list === undefined) {
    list = Object.freeze([name]);
    singleServices.set(name, list);
  }
  return list;
}

function crdsNamed(crds: readonly string[]): string {
  return crds.length === 1 ? `CRD ${crds[0]}` : `CRDs ${crds.join(', ')}`;
}

/**
 * The XRD a CRD was generated from: its controller owner, a CompositeResourceDefinition (Crossplane
 * owns what it generates). What lets a change of a claim's CRD, whose name is not the XRD's, wake
 * the XRD target.
 */
export function xrdOfGeneratedCrd(crd: unknown): string | undefined {
  const owners = (crd as { metadata?: { ownerReferences?: readonly OwnerReference[] } } | undefined)?.metadata
    ?.ownerReferences;
  return owners?.find(
    (o) =>
      o.controller === true && o.kind === KINDS.xrd.kind && o.apiVersion?.startsWith(`${KINDS.xrd.group}/`),
  )?.name;
}

interface OwnerReference {
  apiVersion?: string;
  kind?: string;
  name?: string;
  controller?: boolean;
}
