import { describe, expect, it } from 'vitest';
import { natsBackend } from './nats.ts';

describe('natsBackend', () => {
  it('is a process unless SWITCHYARD_NATS_BACKEND selects testcontainers', () => {
    expect(natsBackend({})).toBe('process');
    expect(natsBackend({ SWITCHYARD_NATS_BACKEND: 'process' })).toBe('process');
    expect(natsBackend({ SWITCHYARD_NATS_BACKEND: 'testcontainers' })).toBe('testcontainers');
  });

  it('refuses any other value, naming the ones it takes', () => {
    expect(() => natsBackend({ SWITCHYARD_NATS_BACKEND: 'docker' })).toThrow(
      /expected process or testcontainers/,
    );
  });
});
