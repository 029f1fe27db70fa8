import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configKeys, envNameFor } from './keys.ts';
import { ConfigError, loadConfig } from './load.ts';
import { renderConfigurationReference } from './reference.ts';
import { defaultConfig } from './schema.ts';

const file = (text: string) => () => text;

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('defaults: writes unlimited, events 200/400 with a 1000-deep queue, fan-out 50/s, 24 h retention, 16 partitions per concern but 64 for handover', () => {
    const { config } = loadConfig({ argv: [], env: {} });
    expect(config).toEqual(defaultConfig());
    expect(config.kubernetes).toEqual({
      qps: 0,
      burst: 0,
      eventQPS: 200,
      eventBurst: 400,
      eventQueueSize: 1000,
    });
    expect(config.bus).toEqual({
      fanoutRatePerSecond: 50,
      recordRetentionHours: 24,
      duplicateWindowSeconds: 120,
      streamReplicas: 1,
      partitions: { assign: 16, leaseAggregate: 16, handover: 64, configStatus: 16, instances: 16 },
    });
    expect(config.log.level).toBe('info');
  });

  it('precedence is flags > env > file > defaults, key by key', () => {
    const { config, origins } = loadConfig({
      argv: ['--config=/etc/switchyard.yaml', '--kubernetes.qps=30'],
      env: { SWITCHYARD_KUBERNETES_QPS: '20', SWITCHYARD_KUBERNETES_BURST: '60' },
      readFile: file('kubernetes:\n  qps: 10\n  burst: 15\n  eventQPS: 100\nlog:\n  level: debug\n'),
    });
    expect(config.kubernetes).toMatchObject({ qps: 30, burst: 60, eventQPS: 100, eventBurst: 400 });
    expect(config.log.level).toBe('debug');
    expect(origins).toMatchObject({
      'kubernetes.qps': 'flag --kubernetes.qps',
      'kubernetes.burst': 'env SWITCHYARD_KUBERNETES_BURST',
      'kubernetes.eventQPS': 'file /etc/switchyard.yaml',
    });
  });

  it('takes the file from SWITCHYARD_CONFIG, flags as `--key value` too, and JSON files', () => {
    const { config, rest } = loadConfig({
      argv: ['serve', '--nats.url', 'nats://bus:4222', '--component=watcher'],
      env: { SWITCHYARD_CONFIG: '/c.json', SWITCHYARD_BIN_DIR: '/not/a/config/key' },
      readFile: file('{"bus": {"fanoutRatePerSecond": 25}}'),
    });
    expect(config.nats.url).toBe('nats://bus:4222');
    expect(config.bus.fanoutRatePerSecond).toBe(25);
    expect(rest).toEqual(['serve', '--component=watcher']);
  });

  it('names the key, the value and its source when a value is invalid', () => {
    const found = problems(() =>
      loadConfig({
        argv: ['--kubernetes.eventBurst=1.5'],
        env: { SWITCHYARD_KUBERNETES_EVENT_QPS: 'lots', SWITCHYARD_LOG_LEVEL: 'loud' },
      }),
    );
    expect(found).toHaveLength(3);
    expect(found.find((p) => p.startsWith('kubernetes.eventQPS'))).toMatch(
      /expected number.*"lots" from env SWITCHYARD_KUBERNETES_EVENT_QPS/,
    );
    expect(found.find((p) => p.startsWith('kubernetes.eventBurst'))).toMatch(
      /"1\.5" from flag --kubernetes\.eventBurst \(expected integer ≥ 0\)/,
    );
    expect(found.find((p) => p.startsWith('log.level'))).toMatch(/"loud" from env SWITCHYARD_LOG_LEVEL/);
  });

  it('takes bus.streamReplicas 1 or 3 from SWITCHYARD_BUS_STREAM_REPLICAS, and refuses any other count', () => {
    expect(
      loadConfig({ argv: [], env: { SWITCHYARD_BUS_STREAM_REPLICAS: '3' } }).config.bus.streamReplicas,
    ).toBe(3);
    const [problem] = problems(() => loadConfig({ argv: ['--bus.streamReplicas=2'], env: {} }));
    expect(problem).toMatch(/bus\.streamReplicas: .*"2" from flag --bus\.streamReplicas/);
    expect(problem).toMatch(/1\|3|1 \| 3/);
  });

  it('never coerces an empty or blank value to 0', () => {
    expect(problems(() => loadConfig({ argv: [], env: { SWITCHYARD_KUBERNETES_QPS: '' } }))[0]).toMatch(
      /kubernetes\.qps: .*expected number/,
    );
  });

  it('rejects unknown flags and env variables under a config section, with a suggestion', () => {
    const found = problems(() =>
      loadConfig({
        argv: ['--kubernetes.eventqps=5'],
        env: { SWITCHYARD_KUBERNETES_EVENTQPS: '5' },
      }),
    );
    expect(found).toContain('unknown flag --kubernetes.eventqps (did you mean kubernetes.eventQPS?)');
    expect(found).toContain(
      'unknown environment variable SWITCHYARD_KUBERNETES_EVENTQPS (did you mean SWITCHYARD_KUBERNETES_EVENT_QPS?)',
    );
  });

  it('reports an unknown key in the file by its full path', () => {
    const found = problems(() =>
      loadConfig({ argv: ['--config=/f.yaml'], env: {}, readFile: file('kubernetes:\n  qsp: 5\n') }),
    );
    expect(found).toEqual(['kubernetes.qsp: unknown key in the config file']);
  });

  it('reports an unreadable or malformed file and a flag without a value', () => {
    expect(
      problems(() =>
        loadConfig({
          argv: ['--config=/missing.yaml'],
          env: {},
          readFile: () => {
            throw new Error('ENOENT: no such file');
          },
        }),
      ),
    ).toEqual(['config file /missing.yaml: ENOENT: no such file']);
    expect(
      problems(() => loadConfig({ argv: ['--config=/f', '--log.level'], env: {}, readFile: file('[1]') })),
    ).toEqual([
      'flag --log.level needs a value (--log.level=<value>)',
      'config file /f: expected a mapping of sections (kubernetes:, nats:, …)',
    ]);
  });
});

describe('configuration keys', () => {
  it('map to distinct, predictable environment variables', () => {
    expect(envNameFor('kubernetes.eventQPS')).toBe('SWITCHYARD_KUBERNETES_EVENT_QPS');
    expect(envNameFor('bus.fanoutRatePerSecond')).toBe('SWITCHYARD_BUS_FANOUT_RATE_PER_SECOND');
    expect(new Set(configKeys.map((k) => k.env)).size).toBe(configKeys.length);
  });

  it('every key says what it caps and at what scope (per process, per client or fleet-wide)', () => {
    for (const key of configKeys.filter((k) => k.type.startsWith('number') || k.type.startsWith('integer'))) {
      expect(key.description, key.path).toMatch(/per process|fleet|every process|whole fleet/i);
    }
  });

  it('docs/configuration.md carries the reference generated from the schema (run node src/config/reference.ts)', () => {
    const docs = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'configuration.md'), 'utf8');
    expect(docs).toContain(renderConfigurationReference());
  });

  it('sets one concern’s partition count from the environment, leaving the others at their default', () => {
    const { config } = loadConfig({ argv: [], env: { SWITCHYARD_BUS_PARTITIONS_HANDOVER: '64' } });
    expect(config.bus.partitions).toEqual({
      assign: 16,
      leaseAggregate: 16,
      handover: 64,
      configStatus: 16,
      instances: 16,
    });
    expect(() => loadConfig({ argv: [], env: { SWITCHYARD_BUS_PARTITIONS_ASSIGN: '0' } })).toThrow();
  });
});
