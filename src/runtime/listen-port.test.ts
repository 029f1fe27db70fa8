import { describe, expect, it } from 'vitest';
import { listenPort } from './listen-port.ts';

describe('listenPort', () => {
  it('is the container port when the node gives no override', () => {
    expect(listenPort(9443, {})).toBe(9443);
  });

  it('is the local node agent override when there is one', () => {
    expect(listenPort(9443, { SWITCHYARD_HOST_PORT_9443: '41234' })).toBe(41234);
  });

  it('is 0, any free port, when a process started by hand asks for it', () => {
    expect(listenPort(8081, { SWITCHYARD_HOST_PORT_8081: '0' })).toBe(0);
  });

  it('rejects an override that is not a port', () => {
    expect(() => listenPort(9443, { SWITCHYARD_HOST_PORT_9443: '' })).toThrow(/not a TCP port/);
    expect(() => listenPort(9443, { SWITCHYARD_HOST_PORT_9443: '-1' })).toThrow(/not a TCP port/);
    expect(() => listenPort(9443, { SWITCHYARD_HOST_PORT_9443: 'nine' })).toThrow(/not a TCP port/);
    expect(() => listenPort(9443, { SWITCHYARD_HOST_PORT_9443: '70000' })).toThrow(/not a TCP port/);
  });
});
