import { describe, expect, it } from 'vitest';
import { podPhase, restartsAfter } from './pod-runner.ts';

const finishedAt = new Date(0);

describe('a pod’s containers as kubelet runs them', () => {
  it('restarts by the restart policy: Always every exit, OnFailure a failed one, Never none', () => {
    expect([0, 1, null].map((code) => restartsAfter(undefined, code))).toEqual([true, true, true]);
    expect([0, 1, null].map((code) => restartsAfter('Always', code))).toEqual([true, true, true]);
    expect([0, 1, null].map((code) => restartsAfter('OnFailure', code))).toEqual([false, true, true]);
    expect([0, 1, null].map((code) => restartsAfter('Never', code))).toEqual([false, false, false]);
  });

  it('is Succeeded when every container exited 0 for good, Failed when one did not, Running or Pending before', () => {
    const exited = (exitCode: number) => ({ restartCount: 0, terminated: { exitCode, finishedAt } });
    const running = { restartCount: 0, terminated: undefined };
    expect(podPhase([exited(0), exited(0)], false)).toBe('Succeeded');
    expect(podPhase([exited(0), exited(2)], false)).toBe('Failed');
    expect(podPhase([exited(0), running], true)).toBe('Running');
    expect(podPhase([running], false)).toBe('Pending');
    expect(podPhase([{ restartCount: 1, terminated: undefined }], false)).toBe('Running');
  });
});
