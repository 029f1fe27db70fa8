// Configs in the reference operator's YAML shape, only the API group changed, checked against
// what its strategy documentation says each strategy does (docs/strategies/*.md and
// docs/configuration/xrdconversionconfig.md of TeraSky-OSS/declarative-conversion-operator).
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { conversionConfigSchema } from '../api/conversion-config.ts';
import { type CompileResult, compile } from './compile.ts';
import { convert } from './convert.ts';
import type { Router } from './plan.ts';
import { targetVersions } from './target-versions.ts';

const XRD = `
apiVersion: apiextensions.crossplane.io/v2
kind: CompositeResourceDefinition
metadata:
  name: xwidgets.example.org
spec:
  group: example.org
  names: {kind: XWidget, plural: xwidgets}
  versions:
    - name: v3
      served: true
      referenceable: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                storageGB: {type: string}
                size: {type: string, enum: [Small, Medium, Large]}
                mode: {type: string}
                tuning: {type: string}
            status:
              type: object
              properties:
                phase: {type: string}
    - name: v2
      served: true
      referenceable: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                storageSize: {type: string}
                size: {type: string, enum: [S, M, L]}
                schemaVersion: {type: string}
                mode: {type: string}
                tuning: {type: string}
            status:
              type: object
              properties:
                phase: {type: string}
    - name: v1
      served: true
      referenceable: false
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                storageSize: {type: string}
                size: {type: string, enum: [Small, Medium, Large]}
                debugMode: {type: boolean}
                computeUnits: {type: integer}
                mode: {type: string}
                advancedTuning: {type: string}
            status:
              type: object
              properties:
                state: {type: string}
`;

const CONFIG = `
apiVersion: switchyard.dev/v1alpha1
kind: XRDConversionConfig
metadata:
  name: xwidgets-conversion
spec:
  targetXRD:
    name: xwidgets.example.org
  hubVersion: v3
  spokes:
    - version: v2
      rules:
        - strategy: FieldRename
          fieldRename:
            hubPath: spec.storageGB
            spokePath: spec.storageSize
        - strategy: EnumRemap
          enumRemap:
            path: spec.size
            mapping:
              - hub: Small
                spoke: S
              - hub: Medium
                spoke: M
              - hub: Large
                spoke: L
        - strategy: Constant
          constant:
            path: spec.schemaVersion
            existsOn: Spoke
            value: "v2"
          acknowledgeLossy: true
          reason: >-
            schemaVersion is a v2-only bookkeeping field; its value is always
            forced to "v2" and carries no information worth round-tripping
            through the hub.
    - version: v1
      rules:
        - strategy: FieldRename
          fieldRename:
            hubPath: spec.storageGB
            spokePath: spec.storageSize
        - strategy: Delete
          delete:
            path: spec.debugMode
            existsOn: Spoke
          acknowledgeLossy: true
          reason: debugMode is a v1-only legacy escape hatch with no hub equivalent.
        - strategy: DefaultValue
          defaultValue:
            path: spec.computeUnits
            existsOn: Spoke
            default: 1
          acknowledgeLossy: true
          reason: computeUnits only exists on v1.
        - strategy: FieldRename
          fieldRename:
            hubPath: status.phase
            spokePath: status.state
        - strategy: FieldRename
          fieldRename:
            hubPath: spec.tuning
            spokePath: spec.advancedTuning
          when:
            path: spec.mode
            equals: advanced
          acknowledgeLossy: true
          reason: tuning only means something in advanced mode.
`;

function expectRejected(result: CompileResult, diagnostic: unknown) {
  expect(result.ok, 'the config must be rejected, not served').toBe(false);
  if (!result.ok) expect(result.diagnostics).toContainEqual(diagnostic);
}

function configSpec(yaml: string) {
  return conversionConfigSchema.parse(parse(yaml)).spec;
}

function router(): Router {
  const result = compile(configSpec(CONFIG), targetVersions(parse(XRD)));
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
  return result.router;
}

const xwidget = (version: string, spec: object, status?: object) => ({
  apiVersion: `example.org/${version}`,
  kind: 'XWidget',
  metadata: { name: 'my-widget' },
  spec,
  ...(status ? { status } : {}),
});

function converted(object: object, from: string, to: string): unknown {
  const result = convert(router(), object, from, to);
  if (!result.ok) throw new Error(result.error.message);
  return result.object;
}

describe('a reference-design config (API group switchyard.dev) compiles and converts as documented', () => {
  it('compiles against the XRD, with the referenceable version as the hub', () => {
    expect([...router().spokes.keys()].sort()).toEqual(['v1', 'v2']);
  });

  it('FieldRename: the hub storageGB is the spoke storageSize, same value, both ways', () => {
    expect(converted(xwidget('v3', { storageGB: '500' }), 'v3', 'v2')).toMatchObject({
      spec: { storageSize: '500' },
    });
    expect(converted(xwidget('v2', { storageSize: '500' }), 'v2', 'v3')).toEqual(
      xwidget('v3', { storageGB: '500' }),
    );
  });

  it('Delete: debugMode is gone converting up, and converting back down produces no debugMode', () => {
    const hub = converted(xwidget('v1', { storageSize: '64', debugMode: true }), 'v1', 'v3');
    expect(hub).toEqual(xwidget('v3', { storageGB: '64' }));
    expect(converted(hub as object, 'v3', 'v1')).not.toHaveProperty('spec.debugMode');
  });

  it('DefaultValue: a hub-native object converted down gets computeUnits: 1; a real value is lost going up', () => {
    expect(converted(xwidget('v3', { storageGB: '500' }), 'v3', 'v1')).toEqual(
      xwidget('v1', { storageSize: '500', computeUnits: 1 }),
    );
    expect(converted(xwidget('v1', { storageSize: '500', computeUnits: 4 }), 'v1', 'v3')).toEqual(
      xwidget('v3', { storageGB: '500' }),
    );
  });

  it('Constant: up to the hub and back down always yields schemaVersion "v2"', () => {
    const hub = converted(
      xwidget('v2', { storageSize: '500', schemaVersion: 'some-other-value' }),
      'v2',
      'v3',
    );
    expect(hub).toEqual(xwidget('v3', { storageGB: '500' }));
    expect(converted(hub as object, 'v3', 'v2')).toEqual(
      xwidget('v2', { storageSize: '500', schemaVersion: 'v2' }),
    );
  });

  it('EnumRemap: hub "Large" is spoke "L", both ways', () => {
    expect(converted(xwidget('v3', { size: 'Large' }), 'v3', 'v2')).toMatchObject({ spec: { size: 'L' } });
    expect(converted(xwidget('v2', { size: 'S' }), 'v2', 'v3')).toMatchObject({ spec: { size: 'Small' } });
  });

  it('EnumRemap: under the default onUnmapped…Value: Error, an uncovered enum value rejects the config', () => {
    const config = CONFIG.replace(/ {14}- hub: Large\n {16}spoke: L\n/, '');
    const result = compile(configSpec(config), targetVersions(parse(XRD)));
    expectRejected(result, expect.objectContaining({ code: 'UnmappedEnumValue' }));
  });

  it('status fields work exactly like spec fields', () => {
    const v1 = converted(xwidget('v3', {}, { phase: 'Ready' }), 'v3', 'v1');
    expect(v1).toMatchObject({ status: { state: 'Ready' } });
    expect(converted(v1 as object, 'v1', 'v3')).toMatchObject({ status: { phase: 'Ready' } });
  });

  it('`when` is evaluated on the input; when it does not match, the destination is not written', () => {
    expect(converted(xwidget('v3', { mode: 'advanced', tuning: 'x' }), 'v3', 'v1')).toMatchObject({
      spec: { mode: 'advanced', advancedTuning: 'x' },
    });
    expect(converted(xwidget('v3', { mode: 'basic', tuning: 'x' }), 'v3', 'v1')).not.toHaveProperty(
      'spec.advancedTuning',
    );
  });

  it('a spoke converts to another spoke through the hub', () => {
    expect(
      converted(xwidget('v1', { storageSize: '5', size: 'Medium', debugMode: false }), 'v1', 'v2'),
    ).toEqual(xwidget('v2', { storageSize: '5', size: 'M', schemaVersion: 'v2' }));
  });

  it('a lossy rule without acknowledgeLossy: true rejects the whole config', () => {
    const config = CONFIG.replace(
      '          acknowledgeLossy: true\n          reason: computeUnits',
      '          reason: computeUnits',
    );
    const result = compile(configSpec(config), targetVersions(parse(XRD)));
    expectRejected(
      result,
      expect.objectContaining({ code: 'UnacknowledgedLossy', version: 'v1', ruleIndex: 2 }),
    );
  });

  it('a field left unclaimed that differs between hub and spoke is an error, not a silent drop', () => {
    const config = CONFIG.replace(/ {8}- strategy: Delete\n(.*\n){5}/, '');
    const result = compile(configSpec(config), targetVersions(parse(XRD)));
    expectRejected(
      result,
      expect.objectContaining({ code: 'UnclaimedField', version: 'v1', path: 'spec.debugMode' }),
    );
  });
});
