import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import { int, obj, object, root, spec, str, versions } from '../test-support.ts';

const hubV = root({ replicas: int(), network: obj({ cidr: str(), mode: str() }) });
const spokeV = root({ replicas: obj({ count: int(), autoscale: str() }), networkCIDR: str() });
const config = spec('v2', {
  v1: [
    {
      strategy: 'ScalarToObject',
      scalarToObject: {
        hubPath: 'spec.replicas',
        spokePath: 'spec.replicas',
        key: 'count',
        defaultsForOtherKeys: { autoscale: 'off' },
      },
      acknowledgeLossy: true,
    },
    {
      strategy: 'ObjectToScalar',
      objectToScalar: {
        hubPath: 'spec.network',
        spokePath: 'spec.networkCIDR',
        key: 'cidr',
        defaultsForOtherKeys: { mode: 'bridge' },
      },
      acknowledgeLossy: true,
    },
  ],
});

describe('ScalarToObject and ObjectToScalar', () => {
  const compiled = compile(config, versions({ v2: hubV, v1: spokeV }));
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
  const router = compiled.router;

  it('wraps the scalar under key with the defaults, and unwraps the object to its key', () => {
    const down = convert(
      router,
      object('v2', { replicas: 3, network: { cidr: '10.0.0.0/8', mode: 'nat' } }),
      'v2',
      'v1',
    );
    expect(down).toMatchObject({
      ok: true,
      object: {
        apiVersion: 'example.org/v1',
        spec: { replicas: { count: 3, autoscale: 'off' }, networkCIDR: '10.0.0.0/8' },
      },
    });
    const up = convert(
      router,
      object('v1', { replicas: { count: 5, autoscale: 'on' }, networkCIDR: '192.168.0.0/16' }),
      'v1',
      'v2',
    );
    expect(up).toMatchObject({
      ok: true,
      object: { spec: { replicas: 5, network: { cidr: '192.168.0.0/16', mode: 'bridge' } } },
    });
  });

  it('is lossy towards the scalar when the object declares other keys, and says so unacknowledged', () => {
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    const unacknowledged = spec('v2', {
      v1: [
        {
          strategy: 'ScalarToObject',
          scalarToObject: { hubPath: 'spec.replicas', spokePath: 'spec.replicas', key: 'count' },
        },
        {
          strategy: 'ObjectToScalar',
          objectToScalar: { hubPath: 'spec.network', spokePath: 'spec.networkCIDR', key: 'cidr' },
          acknowledgeLossy: true,
        },
      ],
    });
    const refused = compile(unacknowledged, versions({ v2: hubV, v1: spokeV }));
    expect(refused.ok).toBe(false);
    if (!refused.ok)
      expect(refused.diagnostics.map((d) => d.message).join('\n')).toMatch(
        /spec\.replicas also declares autoscale/,
      );
  });

  it('writes nothing for an absent field or an object without the key', () => {
    const up = convert(router, object('v1', { replicas: { autoscale: 'on' } }), 'v1', 'v2');
    expect(up.ok && (up.object as { spec: object }).spec).toEqual({});
  });
});
