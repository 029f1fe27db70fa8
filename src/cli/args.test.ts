import { describe, expect, it } from 'vitest';
import { CLUSTER_OPTIONS, OUTPUT_OPTIONS, parseCommandArgs, UsageError, usageText } from './args.ts';

const OPTIONS = {
  all: { type: 'boolean', description: 'every one' },
  add: { type: 'string', multiple: true, valueName: 'NAME', description: 'one more' },
  ...OUTPUT_OPTIONS,
  ...CLUSTER_OPTIONS,
} as const;

const parse = (args: string[], positionals = true) =>
  parseCommandArgs('test cmd', args, OPTIONS, { positionals });

describe('parseCommandArgs', () => {
  it.each([
    [['-o', 'json'], 'json'],
    [['-ojson'], 'json'],
    [['-o=json'], 'json'],
    [['--output', 'yaml'], 'yaml'],
    [['--output=table'], 'table'],
  ])("reads -o in kubectl's spelling %j", (args, output) => {
    expect(parse(args).values.output).toBe(output);
  });

  it("reads kubectl's cluster flags in either form, among the command's own", () => {
    expect(
      parse(['widgets.example.com', '--kubeconfig=/k', '--context', 'prod', '-n', 'sy', '-o', 'json']),
    ).toEqual({
      values: { kubeconfig: '/k', context: 'prod', namespace: 'sy', output: 'json' },
      positionals: ['widgets.example.com'],
    });
    expect(parse(['--namespace=other', '-n=sy']).values.namespace).toBe('sy');
  });

  it('collects a repeated option, and takes what follows -- as positionals', () => {
    expect(parse(['--add=a', '--add', 'b', '--', '-o=json'])).toEqual({
      values: { add: ['a', 'b'] },
      positionals: ['-o=json'],
    });
  });

  it.each([
    [['--frobnicate'], 'unknown argument --frobnicate'],
    [['-x'], 'unknown argument -x'],
    [['-o'], '-o takes table, json, yaml, got nothing'],
    [['--output', '--all'], '--output takes table, json, yaml, got nothing'],
    [['-o', 'wide'], '-o takes table, json, yaml, got "wide"'],
    [['--output=xml'], '--output takes table, json, yaml, got "xml"'],
    [['-n'], '-n needs a value'],
    [['--kubeconfig='], '--kubeconfig needs a value'],
    [['--context', '--all'], '--context needs a value'],
    [['--all=yes'], '--all takes no value'],
  ])('refuses %j, naming the command and the argument as typed', (args, problem) => {
    expect(() => parse(args)).toThrow(new UsageError('test cmd', problem));
  });

  it('refuses a positional where the command takes none', () => {
    expect(() => parse(['--all', 'stray'], false)).toThrow('test cmd: unexpected argument stray');
  });
});

describe('usageText', () => {
  it('lists every option the parser takes, with its value and its line of help', () => {
    const text = usageText('usage: switchyard test cmd [options]\n', OPTIONS);
    expect(text).toMatch(/^usage: switchyard test cmd \[options\]\n\nOptions:\n/);
    expect(text).toMatch(/^ {6}--all +every one$/m);
    expect(text).toMatch(/^ {6}--add=NAME… +one more$/m);
    expect(text).toMatch(/^ {2}-o, --output=table\|json\|yaml +the answer as a table/m);
    expect(text).toMatch(
      /^ {2}-n, --namespace=<name> +the namespace Switchyard runs in \(default switchyard-system\)$/m,
    );
    expect(text).toMatch(/^ {6}--kubeconfig=<file> +/m);
  });
});
