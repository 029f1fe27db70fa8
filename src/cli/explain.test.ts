import { describe, expect, it } from 'vitest';
import type { TargetExplanation } from '../handlers/explain.ts';
import { formatExplanation, parseExplainArgs } from './explain.ts';

const WAITING: TargetExplanation = {
  target: 'widgets.example.com',
  configs: ['CRDConversionConfig/widgets'],
  resolution: { instance: 'delta', rule: 'Pool' },
  scores: [
    { instance: 'delta', weight: 1, u: 0.9, score: 2.3 },
    { instance: 'bravo', weight: 1, u: 0.5, score: 0.69 },
  ],
  status: {
    assigned: 'delta',
    handoverReady: { status: 'False', reason: 'HandoverPending', message: 'no live report from delta-2' },
    handoverDestination: 'delta',
  },
  names: { service: 'bravo-webhook-server', instance: 'bravo' },
  destination: {
    instance: 'delta',
    namespace: 'switchyard-system',
    readyPods: ['delta-1', 'delta-2'],
    pods: [{ pod: 'delta-1', ready: true, lease: 'live', target: 'serves' }],
  },
  gate: { decided: true, action: 'wait', reason: 'HandoverPending', message: 'no live report from delta-2' },
};

describe('switchyard explain', () => {
  it('takes targets or --all, and json output', () => {
    expect(parseExplainArgs(['a.example.com', 'b.example.com'])).toEqual({
      targets: ['a.example.com', 'b.example.com'],
      output: 'table',
    });
    expect(parseExplainArgs(['--all', '-o', 'json'])).toEqual({ targets: 'all', output: 'json' });
    for (const bad of [[], ['--all', 'a.example.com'], ['--frobnicate', 'a']])
      expect(() => parseExplainArgs(bad)).toThrow();
  });

  it('says where a waiting target is, where it goes, and what it waits for', () => {
    const text = formatExplanation(WAITING);
    expect(text).toMatch(/^widgets\.example\.com\n/);
    expect(text).toMatch(/resolves to\s+delta \(rule: Pool\)/);
    expect(text).toMatch(/pool scores\s+delta 2\.300 \(weight 1\), bravo 0\.6900/);
    expect(text).toMatch(/conversion now\s+names Service bravo-webhook-server \(instance bravo\)/);
    expect(text).toMatch(
      /destination\s+delta in switchyard-system: 2 ready Pods; delta-1 ready, Lease live, serves/,
    );
    expect(text).toMatch(/gate now\s+wait HandoverPending: no live report from delta-2/);
  });

  it('says why nothing resolves, and leaves out what does not apply', () => {
    const text = formatExplanation({
      ...WAITING,
      resolution: { unresolved: 'NoInstance', message: 'no ConversionWebhookServer …' },
      scores: [],
      status: { assigned: undefined, handoverReady: undefined, handoverDestination: undefined },
      names: { service: undefined, instance: undefined },
      destination: undefined,
      gate: { decided: false, why: 'no ConversionWebhookServer …' },
    } as TargetExplanation);
    expect(text).toMatch(/resolves to\s+nothing: NoInstance/);
    expect(text).not.toMatch(/pool scores|HandoverReady|destination/);
    expect(text).toMatch(/conversion now\s+names no Service/);
    expect(text).toMatch(/gate now\s+nothing to decide/);
  });

  it('for an XRD, says what each CRD Crossplane generated names: what the apiserver routes by', () => {
    const text = formatExplanation({
      ...WAITING,
      target: 'xwidgets.example.com',
      names: { service: 'delta-webhook-server', instance: 'delta' },
      routedBy: [
        { crd: 'xwidgets.example.com', exists: true, service: 'bravo-webhook-server', followsTarget: false },
        { crd: 'widgets.example.com', exists: false, service: undefined, followsTarget: false },
      ],
      gate: { decided: true, action: 'wait', reason: 'AwaitingCrossplane', message: 'the CRDs do not yet' },
    });
    expect(text).toMatch(
      /routed by\s+CRD xwidgets\.example\.com: names Service bravo-webhook-server, not yet what the XRD says/,
    );
    expect(text).toMatch(/routed by\s+CRD widgets\.example\.com: not generated \(is Crossplane running\?\)/);
    expect(text).toMatch(/gate now\s+wait AwaitingCrossplane/);
  });
});
