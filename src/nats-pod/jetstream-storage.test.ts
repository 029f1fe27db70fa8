import { describe, expect, it } from 'vitest';
import { jetstreamStorageOf } from './jetstream-storage.ts';

// The fields of a real /jsz (nats-server 2.12) that matter, among others it carries.
const jsz = (over: Record<string, unknown> = {}) => ({
  server_id: 'NABC',
  memory: 1_024,
  storage: 5_000_000,
  reserved_memory: 0,
  reserved_storage: 0,
  accounts: 1,
  config: { max_memory: 268_435_456, max_storage: 8_589_934_592, store_dir: '/data/jetstream' },
  ...over,
});

describe('jetstreamStorageOf', () => {
  it('reads both stores, used and limit', () => {
    expect(jetstreamStorageOf(jsz())).toEqual({
      ok: true,
      stores: [
        { store: 'file', usedBytes: 5_000_000, limitBytes: 8_589_934_592 },
        { store: 'memory', usedBytes: 1_024, limitBytes: 268_435_456 },
      ],
    });
  });

  it('leaves out a limit the server does not state as positive', () => {
    const reading = jetstreamStorageOf(jsz({ config: { max_memory: 0, max_storage: -1 } }));
    expect(reading).toEqual({
      ok: true,
      stores: [
        { store: 'file', usedBytes: 5_000_000 },
        { store: 'memory', usedBytes: 1_024 },
      ],
    });
  });

  it.each([
    ['a server without JetStream', { disabled: true, config: {} }, /not enabled/],
    ['no config', { memory: 0, storage: 0 }, /no storage figures/],
    ['a used figure that is not a number', jsz({ storage: '5MB' }), /no storage figures/],
    ['a negative used figure', jsz({ memory: -1 }), /no storage figures/],
    ['not an object', 'ok', /no storage figures/],
    ['null', null, /no storage figures/],
  ])('%s: says why not', (_what, input, reason) => {
    const reading = jetstreamStorageOf(input);
    expect(reading.ok).toBe(false);
    if (!reading.ok) expect(reading.reason).toMatch(reason);
  });
});
