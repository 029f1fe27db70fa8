import { describe, expect, it } from 'vitest';
import {
  type Credentials,
  credentialsOf,
  decideMonitorRequest,
  type GateDecision,
  reduceVarz,
} from './monitor-gate-decision.ts';

const PASSWORD = 'Zm9vYmFyYmF6cXV4cXV1eA';
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('credentialsOf', () => {
  it.each<[string, string | undefined, string | undefined, Credentials]>([
    ['no header', undefined, PASSWORD, 'none'],
    ['an empty header', '', PASSWORD, 'none'],
    ['the monitor user and its password', basic('monitor', PASSWORD), PASSWORD, 'valid'],
    ['the scheme in any case', basic('monitor', PASSWORD).replace('Basic', 'bAsIc'), PASSWORD, 'valid'],
    ['a password with a colon in it', basic('monitor', 'a:b'), 'a:b', 'valid'],
    ['a wrong password', basic('monitor', `${PASSWORD}x`), PASSWORD, 'invalid'],
    ['a prefix of the password', basic('monitor', PASSWORD.slice(0, 10)), PASSWORD, 'invalid'],
    ['another user with the password', basic('admin', PASSWORD), PASSWORD, 'invalid'],
    ['no colon', `Basic ${Buffer.from('monitor').toString('base64')}`, PASSWORD, 'invalid'],
    ['a bearer token', `Bearer ${PASSWORD}`, PASSWORD, 'invalid'],
    ['any credentials when no password is configured', basic('monitor', ''), undefined, 'invalid'],
    ['an empty password against an empty file', basic('monitor', ''), '', 'invalid'],
  ])('%s → %s', (_what, header, password, expected) => {
    expect(credentialsOf(header, password)).toBe(expected);
  });
});

describe('decideMonitorRequest', () => {
  const cases: [method: string, path: string, credentials: Credentials, kind: GateDecision['kind']][] = [
    // The probes and KEDA, which send no credentials.
    ['GET', '/healthz', 'none', 'pass'],
    ['GET', '/jsz', 'none', 'pass'],
    ['GET', '/varz', 'none', 'reduce-varz'],
    // Prometheus, whatever it brings: the gate answers /metrics itself.
    ['GET', '/metrics', 'none', 'metrics'],
    ['GET', '/metrics', 'invalid', 'metrics'],
    ['GET', '/metrics', 'valid', 'metrics'],
    ['GET', '/metrics/', 'none', 'unauthorized'],
    ['POST', '/metrics', 'none', 'method-not-allowed'],
    // A wrong password does not close what is open, and is told so on /varz.
    ['GET', '/healthz', 'invalid', 'pass'],
    ['GET', '/jsz', 'invalid', 'pass'],
    ['GET', '/varz', 'invalid', 'unauthorized'],
    // Everything else only with credentials.
    ['GET', '/connz', 'none', 'unauthorized'],
    ['GET', '/connz', 'invalid', 'unauthorized'],
    ['GET', '/connz', 'valid', 'pass'],
    ['GET', '/varz', 'valid', 'pass'],
    ['GET', '/subsz', 'none', 'unauthorized'],
    ['GET', '/accountz', 'none', 'unauthorized'],
    ['GET', '/routez', 'none', 'unauthorized'],
    ['GET', '/', 'none', 'unauthorized'],
    // Near misses of the open paths are not open.
    ['GET', '/jsz/', 'none', 'unauthorized'],
    ['GET', '/healthz/../connz', 'none', 'unauthorized'],
    ['GET', '/JSZ', 'none', 'unauthorized'],
    ['GET', '/varz/', 'none', 'unauthorized'],
    // Only reads.
    ['POST', '/healthz', 'valid', 'method-not-allowed'],
    ['HEAD', '/jsz', 'none', 'method-not-allowed'],
  ];
  it.each(cases)('%s %s with credentials %s → %s', (method, path, credentials, kind) => {
    expect(decideMonitorRequest(method, path, credentials).kind).toBe(kind);
  });
});

describe('reduceVarz', () => {
  it('keeps exactly the fields KEDA reads', () => {
    const varz = {
      server_id: 'NABC',
      server_name: 'nats-1',
      version: '2.15.2',
      connect_urls: ['10.0.0.2:4222', '10.0.0.3:4222'],
      cluster: {
        name: 'switchyard-nats',
        addr: '0.0.0.0',
        urls: ['nats-0.nats-headless:6222'],
        tls_required: false,
      },
      connections: 12,
      config_load_time: '2026-01-01T00:00:00Z',
    };
    expect(reduceVarz(varz)).toEqual({
      server_name: 'nats-1',
      connect_urls: ['10.0.0.2:4222', '10.0.0.3:4222'],
      cluster: { urls: ['nats-0.nats-headless:6222'] },
    });
  });

  it('refuses an answer without a server name', () => {
    expect(() => reduceVarz({ connect_urls: [] })).toThrow();
  });
});
