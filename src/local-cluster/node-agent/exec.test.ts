import { describe, expect, it } from 'vitest';
import { exitStatus, parseExecQuery } from './exec.ts';
import { parseForwardHeaders } from './port-forward.ts';

describe('parseExecQuery', () => {
  it('reads the command and the streams kubectl asked for, as the apiserver passes them on', () => {
    expect(
      parseExecQuery(new URLSearchParams('command=sh&command=-c&command=echo+hi&output=1&error=1')),
    ).toEqual({
      command: ['sh', '-c', 'echo hi'],
      stdin: false,
      stdout: true,
      stderr: true,
    });
    expect(parseExecQuery(new URLSearchParams('command=cat&input=true&output=true'))).toMatchObject({
      stdin: true,
      stdout: true,
      stderr: false,
    });
  });

  it('refuses a terminal, no command, and no stream at all, each with its reason', () => {
    expect(parseExecQuery(new URLSearchParams('command=sh&tty=1&input=1&output=1'))).toEqual({
      error: expect.stringMatching(/^tty: .*no terminal.*drop -t$/),
    });
    expect(parseExecQuery(new URLSearchParams('output=1'))).toEqual({ error: 'exec needs a command' });
    expect(parseExecQuery(new URLSearchParams('command=true'))).toEqual({
      error: expect.stringMatching(/at least one of stdin, stdout and stderr/),
    });
  });
});

describe('exitStatus', () => {
  it('is Success for exit 0 and carries the exit code otherwise, where client-go looks for it', () => {
    expect(exitStatus(0, null)).toEqual({ metadata: {}, status: 'Success' });
    expect(exitStatus(3, null)).toMatchObject({
      status: 'Failure',
      reason: 'NonZeroExitCode',
      details: { causes: [{ reason: 'ExitCode', message: '3' }] },
    });
    expect(exitStatus(null, 'SIGKILL')).toMatchObject({ details: { causes: [{ message: '137' }] } });
    expect(exitStatus(null, 'SIGINT')).toMatchObject({ details: { causes: [{ message: '130' }] } });
  });
});

describe('parseForwardHeaders', () => {
  const stream = (headers: Record<string, string>) => ({ header: (name: string) => headers[name] });

  it('reads the stream type, request and port', () => {
    expect(parseForwardHeaders(stream({ streamType: 'data', requestID: '0', port: '8080' }))).toEqual({
      type: 'data',
      requestId: '0',
      port: 8080,
    });
  });

  it('refuses an unknown type, a missing request and a port that is not one', () => {
    expect(parseForwardHeaders(stream({ streamType: 'stdin', requestID: '0', port: '1' }))).toHaveProperty(
      'error',
    );
    expect(parseForwardHeaders(stream({ streamType: 'data', port: '1' }))).toHaveProperty('error');
    expect(parseForwardHeaders(stream({ streamType: 'data', requestID: '0', port: '70000' }))).toHaveProperty(
      'error',
    );
  });
});
