import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { commands, main, versionLine } from './main.ts';

const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** A command table whose every subcommand fails the test if it is loaded. */
function untouchable(): Record<string, () => Promise<never>> {
  return Object.fromEntries(
    Object.keys(commands).map((name) => [
      name,
      () => Promise.reject(new Error(`loaded the ${name} subcommand's modules`)),
    ]),
  );
}

describe('switchyard --version', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it('is the name and the version in package.json', () => {
    expect(versionLine()).toBe(`switchyard ${VERSION}\n`);
  });

  it('loads no subcommand', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    await main(['--version'], untouchable());
    expect(write).toHaveBeenCalledWith(`switchyard ${VERSION}\n`);
    expect(process.exitCode).toBeUndefined();
  });

  it('prints it and exits 0 as a process', async () => {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [MAIN, '--version']);
    expect(stdout).toBe(`switchyard ${VERSION}\n`);
    expect(stderr).toBe('');
  });

  it('is named in the usage line, which exits 2 without loading anything', async () => {
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    await main(['--versoin'], untouchable());
    expect(write).toHaveBeenCalledWith('switchyard: unknown subcommand --versoin\n');
    expect(write).toHaveBeenCalledWith(
      expect.stringMatching(/^usage: switchyard <demo\|watch\|.*> \[args\] \| --help \| --version\n$/),
    );
    expect(process.exitCode).toBe(2);
  });
});

describe('switchyard --help', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });

  it('lists every subcommand with what it does, and loads none of them', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    await main(['--help'], untouchable());
    const text = String(write.mock.calls[0]?.[0]);
    for (const name of Object.keys(commands)) expect(text).toMatch(new RegExp(`^  ${name} +\\S`, 'm'));
    expect(process.exitCode).toBeUndefined();
  });

  it.each(
    Object.keys(commands),
  )('%s --help says its usage and every configuration key, without running it', async (name) => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    await main([name, '--help'], untouchable());
    const text = String(write.mock.calls[0]?.[0]);
    expect(text).toMatch(new RegExp(`^usage: switchyard ${name}\\b`));
    expect(text).toContain('--kubernetes.qps=<number>');
    expect(text).toContain('SWITCHYARD_LOG_FORMAT');
    expect(process.exitCode).toBeUndefined();
  });
});

describe('the README', () => {
  it('shows the help output as it is', async () => {
    const { overallHelp } = await import('./help.ts');
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain(`$ switchyard --help\n${overallHelp(Object.keys(commands)).trimEnd()}\n\`\`\``);
  });
});
