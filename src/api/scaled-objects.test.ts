import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { planHandlerConsumers } from '../bus/runtime/consumers.ts';
import { defaultConfig } from '../config/schema.ts';
import { CONCERNS } from '../handlers/concerns.ts';
import { ROUTER_CONSUMER } from '../handlers/router.ts';
import { renderScaledObjects } from './scaled-objects.ts';

const FILE = new URL('../../deploy/autoscaling/scaled-objects.yaml', import.meta.url);

type ScaledObject = {
  metadata: { name: string };
  spec: {
    scaleTargetRef: { name: string };
    triggers: { useCachedMetrics?: boolean; metadata: { stream: string; consumer: string } }[];
  };
};

const shipped = () =>
  parseAllDocuments(readFileSync(FILE, 'utf8'))
    .map((d) => d.toJS() as ScaledObject | null)
    .filter((d): d is ScaledObject => d !== null);

describe('deploy/autoscaling/scaled-objects.yaml', () => {
  it('matches the code it is generated from (run `node scripts/gen-scaled-objects.ts` after a change)', () => {
    expect(readFileSync(FILE, 'utf8')).toBe(renderScaledObjects());
  });

  it("watches every consumer each handler pulls from, on its stream, by the runtime's own names", () => {
    const partitions = defaultConfig().bus.partitions;
    const byTarget = new Map(shipped().map((o) => [o.spec.scaleTargetRef.name, o]));
    const specs = [...CONCERNS.map((c) => c.consumers(partitions[c.partitionsOf])), ROUTER_CONSUMER];
    for (const spec of specs) {
      const object = byTarget.get(`switchyard-${spec.durable}`);
      const pulled = planHandlerConsumers(spec).map((c) => c.name);
      expect(
        object?.spec.triggers.map((t) => t.metadata.consumer),
        spec.durable,
      ).toEqual(pulled);
      expect(new Set(object?.spec.triggers.map((t) => t.metadata.stream))).toEqual(new Set([spec.stream]));
    }
    expect(byTarget.get('switchyard-handover')?.spec.triggers.at(-1)?.metadata.consumer).toBe('handover-p63');
  });

  it("lets the HorizontalPodAutoscaler read KEDA's polled values, not one /jsz per trigger per sync of its own", () => {
    const triggers = shipped().flatMap((o) => o.spec.triggers);
    expect(triggers.length).toBeGreaterThan(100);
    expect(triggers.filter((t) => t.useCachedMetrics !== true)).toEqual([]);
  });
});
