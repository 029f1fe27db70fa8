import { afterEach, describe, expect, it, vi } from 'vitest';
import type { EventInput } from '../../kube/event-recorder.ts';
import { REPOINT_EVENT_WINDOW_MS, RepointEvents } from './repoint-events.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('repoint Events', () => {
  it('one Event per destination and verdict per window, however many targets it repointed', () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    const recorded: EventInput[] = [];
    const events = new RepointEvents({ record: (e) => recorded.push(e) > 0 });
    for (let i = 0; i < 40; i++)
      events.add('s5', String(100 + i), { target: `t${i}`, from: 's1', reason: 'HandoverReady' });
    events.add('s5', '7', { target: 'u', from: 's2', reason: 'HandoverUnverified' });
    events.add('s4', '8', { target: 'v', from: undefined, reason: 'FirstApply' });
    vi.advanceTimersByTime(REPOINT_EVENT_WINDOW_MS - 1);
    expect(recorded, 'nothing before the window ends').toEqual([]);
    vi.advanceTimersByTime(1);
    expect(recorded.map((e) => [e.regarding.name, e.reason, e.type])).toEqual([
      ['s5', 'HandoverReady', 'Normal'],
      ['s5', 'HandoverUnverified', 'Warning'],
      ['s4', 'FirstApply', 'Normal'],
    ]);
    expect(recorded[0]?.note).toMatch(/^40 targets now convert through Service s5-webhook-server/);
    expect(recorded[0]?.key).toBe('repoint/s5/HandoverReady/t0/100');
    // The next repoint opens a new batch.
    events.add('s5', '200', { target: 't99', from: 's1', reason: 'HandoverReady' });
    vi.advanceTimersByTime(REPOINT_EVENT_WINDOW_MS);
    expect(recorded).toHaveLength(4);
    expect(recorded[3]?.key).toBe('repoint/s5/HandoverReady/t99/200');
  });
});
