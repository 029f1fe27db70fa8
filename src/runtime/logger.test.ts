import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { printsPretty } from './logger.ts';

const LOGGER = new URL('./logger.ts', import.meta.url).pathname;

/** What one info line looks like from a process whose stdout is a pipe, as in a Pod. */
function loggedLine(format: string): string {
  const script = [
    `import { createLogger } from ${JSON.stringify(LOGGER)};`,
    `createLogger({ level: 'info', format: ${JSON.stringify(format)} }, 'assign')`,
    `  .child({ target: 'widgets.example.com' }).info({ moves: 2 }, 'move held');`,
  ].join('\n');
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
  });
}

describe('printsPretty', () => {
  const terminal = (fd: number) => fd === 2;
  it('auto follows whether the stream is a terminal', () => {
    expect(printsPretty('auto', 2, terminal)).toBe(true);
    expect(printsPretty('auto', 1, terminal)).toBe(false);
  });
  it('json and pretty are what they say, terminal or not', () => {
    expect(printsPretty('json', 2, terminal)).toBe(false);
    expect(printsPretty('pretty', 1, terminal)).toBe(true);
  });
});

describe('createLogger', () => {
  it('writes JSON lines with the level name and an ISO time when stdout is not a terminal', () => {
    const line = JSON.parse(loggedLine('auto')) as Record<string, unknown>;
    expect(line).toMatchObject({
      level: 'info',
      name: 'assign',
      target: 'widgets.example.com',
      moves: 2,
      msg: 'move held',
    });
    expect(new Date(String(line.time)).toISOString()).toBe(line.time);
  });

  it('writes one readable line when asked for pretty, naming the level, the process and the target', () => {
    const out = loggedLine('pretty');
    expect(() => JSON.parse(out)).toThrow();
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(assign\): move held\n/);
    expect(out).toContain('target: "widgets.example.com"');
  });
});
