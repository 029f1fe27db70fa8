// A config and its target whole, read again from the bus, for a reader whose view keeps them
// projected (views/projection.ts) and that compiles the config's rules against the target's
// schemas: the config-status and handover verdicts (config-verdicts.ts), a replica's plans.
import { type ConversionConfig, conversionConfigSchema, targetNameOf } from '../api/conversion-config.ts';
import { RESOURCE_OF_CONFIG, TARGET_OF_CONFIG } from '../api/resources.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { ObjectKey } from '../bus/subjects.ts';
import type { ObjectView } from '../bus/view.ts';

export type WholeReader = Pick<ObjectView, 'whole'>;

/** What a compile reads: the config with its rules, the target with its schemas; or why they cannot be read. */
export type ConfigSources =
  | { kind: 'read'; config: ConversionConfig; target: RecordedObject }
  | { kind: 'unreadable'; why: string };

/**
 * Reads `config` and its target whole. Unreadable when either record is gone from the bus or
 * does not parse (the view then drops or replaces it); rejects when the bus does not answer.
 */
export async function readConfigSources(view: WholeReader, config: ConversionConfig): Promise<ConfigSources> {
  const targetKey = targetKeyOf(config);
  const [wholeConfig, target] = await Promise.all([view.whole(configKeyOf(config)), view.whole(targetKey)]);
  if (target === undefined)
    return {
      kind: 'unreadable',
      why: `the record of ${TARGET_OF_CONFIG[config.kind].kind} ${targetKey.name} could not be read again from the bus`,
    };
  const parsed = conversionConfigSchema.safeParse(wholeConfig);
  if (!parsed.success)
    return {
      kind: 'unreadable',
      why: `the record of ${config.kind} ${config.metadata.name} could not be read again from the bus`,
    };
  return { kind: 'read', config: parsed.data, target };
}

export function targetKeyOf(config: ConversionConfig): ObjectKey {
  return { kind: TARGET_OF_CONFIG[config.kind].viewKind, namespace: '', name: targetNameOf(config) };
}

export function configKeyOf(config: ConversionConfig): ObjectKey {
  return { kind: RESOURCE_OF_CONFIG[config.kind].viewKind, namespace: '', name: config.metadata.name };
}
