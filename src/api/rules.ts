// Conversion rules: the declarative vocabulary a config uses to say how one spoke version
// maps to the hub. The shape follows the existing conversion operator so its users read it
// without a manual: `strategy` names the strategy (PascalCase, like every Kubernetes enum),
// and exactly one params block, keyed by the strategy's camelCase name, carries its
// arguments. `acknowledgeLossy` and `reason` sit beside it because the compiler fails closed
// on a lossy rule that nobody acknowledged.
//
// This file is shared: the conversion engine compiles these rules, the CRD generator emits
// their OpenAPI shape. Paths are dotted field paths relative to the object root
// (`spec.size`), the engine owns their finer grammar.
import { z } from 'zod';
import { jsonValue } from './openapi.ts';

export const STRATEGIES = ['FieldRename', 'Delete', 'DefaultValue', 'Constant', 'EnumRemap'] as const;
export const strategySchema = z.enum(STRATEGIES);
export type Strategy = z.infer<typeof strategySchema>;

/** The params key a strategy's arguments live under (`FieldRename` → `fieldRename`). */
export const PARAMS_KEY = {
  FieldRename: 'fieldRename',
  Delete: 'delete',
  DefaultValue: 'defaultValue',
  Constant: 'constant',
  EnumRemap: 'enumRemap',
} as const satisfies Record<Strategy, string>;
export type ParamsKey = (typeof PARAMS_KEY)[Strategy];

/**
 * An object that rejects fields it does not declare, naming them: a field the user wrote and
 * the engine ignored would be a silent difference between the config and what it does (the
 * reference operator's fields that Switchyard lacks arrive exactly this way). `what` names
 * the object in the message, e.g. "a FieldRename rule".
 */
export function strictObject<Shape extends z.core.$ZodLooseShape>(what: string, shape: Shape) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? unknownFieldsMessage(what, issue.keys, known) : undefined,
  });
}

const OTHER_PARAMS_KEYS = new Set<string>(Object.values(PARAMS_KEY));

function unknownFieldsMessage(what: string, keys: readonly string[], known: string): string {
  const params = keys.filter((k) => OTHER_PARAMS_KEYS.has(k));
  const others = keys.filter((k) => !OTHER_PARAMS_KEYS.has(k));
  const parts: string[] = [];
  if (params.length > 0) {
    parts.push(
      `${what} takes exactly one params block, the one named after its strategy; remove ${params.join(', ')} (or move it into a rule of its own)`,
    );
  }
  if (others.length > 0) parts.push(`${what} has no field ${others.join(', ')} (its fields: ${known})`);
  return parts.join('; ');
}

// Bounds keep the apiserver's CEL cost estimate for the rule validations finite; they are far
// above anything a real config needs.
const MAX_PATH_LENGTH = 1024;
const MAX_REASON_LENGTH = 4096;
const MAX_ENUM_MAPPINGS = 256;

export const fieldPathSchema = z
  .string()
  .min(1)
  .max(MAX_PATH_LENGTH)
  .meta({ description: 'Dotted path of a field from the object root, e.g. spec.size.' });

export const sideSchema = z
  .enum(['Hub', 'Spoke'])
  .meta({ description: 'Which version of the pair declares the field.' });
export type Side = z.infer<typeof sideSchema>;

export const unmappedValuePolicySchema = z.enum(['Error', 'Drop']).meta({
  description: 'What to do with a value the mapping does not list: fail the conversion, or drop it.',
});
export type UnmappedValuePolicy = z.infer<typeof unmappedValuePolicySchema>;

export const fieldRenameParamsSchema = strictObject('fieldRename', {
  hubPath: fieldPathSchema,
  spokePath: fieldPathSchema,
}).meta({ description: 'The field moved: same value and shape, a different path.' });
export type FieldRenameParams = z.infer<typeof fieldRenameParamsSchema>;

export const deleteParamsSchema = strictObject('delete', {
  path: fieldPathSchema,
  existsOn: sideSchema,
}).meta({ description: 'Drop a field that only one side declares. Always lossy towards the other side.' });
export type DeleteParams = z.infer<typeof deleteParamsSchema>;

export const defaultValueParamsSchema = strictObject('defaultValue', {
  path: fieldPathSchema,
  existsOn: sideSchema,
  default: jsonValue('Value written when converting into the side that declares the field.'),
}).meta({ description: 'A field only one side declares; filled with a default when converting into it.' });
export type DefaultValueParams = z.infer<typeof defaultValueParamsSchema>;

export const constantParamsSchema = strictObject('constant', {
  path: fieldPathSchema,
  existsOn: sideSchema,
  value: jsonValue('Value always written on the side that declares the field.'),
}).meta({ description: 'Force a field to a fixed value on the side that declares it.' });
export type ConstantParams = z.infer<typeof constantParamsSchema>;

/**
 * One enumerated value: a string, an integer, a number or a boolean, matched by type and value
 * (`1` is not `"1"`). A structural schema cannot say "one of these scalar types", so the CRD
 * keeps it schemaless and the zod schema (admission) and the compiler (against the target's
 * schema) check it.
 */
export const enumValueSchema = z.union([z.string().max(MAX_PATH_LENGTH), z.number(), z.boolean()]).meta({
  description: 'A string, integer, number or boolean value of the field.',
  'x-kubernetes-preserve-unknown-fields': true,
});
export type EnumValue = z.infer<typeof enumValueSchema>;

export const enumMappingSchema = strictObject('an enumRemap mapping entry', {
  hub: enumValueSchema,
  spoke: enumValueSchema,
});
export type EnumMapping = z.infer<typeof enumMappingSchema>;

export const enumRemapParamsSchema = strictObject('enumRemap', {
  path: fieldPathSchema,
  mapping: z.array(enumMappingSchema).min(1).max(MAX_ENUM_MAPPINGS),
  onUnmappedHubValue: unmappedValuePolicySchema.default('Error'),
  onUnmappedSpokeValue: unmappedValuePolicySchema.default('Error'),
}).meta({ description: 'Map the values of an enumerated scalar field between hub and spoke.' });
export type EnumRemapParams = z.infer<typeof enumRemapParamsSchema>;

export const ruleConditionSchema = strictObject('when', {
  path: fieldPathSchema,
  equals: jsonValue('The rule applies only when the field at path equals this value.'),
}).meta({ description: 'Apply the rule only to objects whose field at path equals a value.' });
export type RuleCondition = z.infer<typeof ruleConditionSchema>;

const ruleCommon = {
  acknowledgeLossy: z
    .boolean()
    .default(false)
    .meta({ description: 'Must be true for a rule that loses information in either direction.' }),
  reason: z
    .string()
    .max(MAX_REASON_LENGTH)
    .optional()
    .meta({ description: 'Why the rule exists; shown beside lossiness verdicts.' }),
  when: ruleConditionSchema.optional(),
};

export const fieldRenameRuleSchema = strictObject('a FieldRename rule', {
  strategy: z.literal('FieldRename'),
  fieldRename: fieldRenameParamsSchema,
  ...ruleCommon,
});
export const deleteRuleSchema = strictObject('a Delete rule', {
  strategy: z.literal('Delete'),
  delete: deleteParamsSchema,
  ...ruleCommon,
});
export const defaultValueRuleSchema = strictObject('a DefaultValue rule', {
  strategy: z.literal('DefaultValue'),
  defaultValue: defaultValueParamsSchema,
  ...ruleCommon,
});
export const constantRuleSchema = strictObject('a Constant rule', {
  strategy: z.literal('Constant'),
  constant: constantParamsSchema,
  ...ruleCommon,
});
export const enumRemapRuleSchema = strictObject('a EnumRemap rule', {
  strategy: z.literal('EnumRemap'),
  enumRemap: enumRemapParamsSchema,
  ...ruleCommon,
});

/**
 * One conversion rule. A discriminated union on `strategy`, so the params block that matches
 * the strategy is required and typed; the CRD states the same constraint as a CEL rule.
 */
export const ruleSchema = z
  .discriminatedUnion(
    'strategy',
    [
      fieldRenameRuleSchema,
      deleteRuleSchema,
      defaultValueRuleSchema,
      constantRuleSchema,
      enumRemapRuleSchema,
    ],
    { error: (issue) => (issue.code === 'invalid_union' ? unknownStrategyMessage(issue.input) : undefined) },
  )
  .meta({ description: 'One conversion rule: a strategy and exactly the params block named after it.' });
export type Rule = z.infer<typeof ruleSchema>;

export function unknownStrategyMessage(rule: unknown): string {
  const strategy =
    typeof rule === 'object' && rule !== null ? (rule as { strategy?: unknown }).strategy : undefined;
  const rejected =
    strategy === undefined ? 'a rule without a strategy' : `strategy ${JSON.stringify(strategy)}`;
  return `${rejected} is not supported; the supported strategies are ${STRATEGIES.join(', ')}`;
}
export type FieldRenameRule = z.infer<typeof fieldRenameRuleSchema>;
export type DeleteRule = z.infer<typeof deleteRuleSchema>;
export type DefaultValueRule = z.infer<typeof defaultValueRuleSchema>;
export type ConstantRule = z.infer<typeof constantRuleSchema>;
export type EnumRemapRule = z.infer<typeof enumRemapRuleSchema>;
