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

export const fieldRenameParamsSchema = z
  .object({ hubPath: fieldPathSchema, spokePath: fieldPathSchema })
  .meta({ description: 'The field moved: same value and shape, a different path.' });
export type FieldRenameParams = z.infer<typeof fieldRenameParamsSchema>;

export const deleteParamsSchema = z
  .object({ path: fieldPathSchema, existsOn: sideSchema })
  .meta({ description: 'Drop a field that only one side declares. Always lossy towards the other side.' });
export type DeleteParams = z.infer<typeof deleteParamsSchema>;

export const defaultValueParamsSchema = z
  .object({
    path: fieldPathSchema,
    existsOn: sideSchema,
    default: jsonValue('Value written when converting into the side that declares the field.'),
  })
  .meta({ description: 'A field only one side declares; filled with a default when converting into it.' });
export type DefaultValueParams = z.infer<typeof defaultValueParamsSchema>;

export const constantParamsSchema = z
  .object({
    path: fieldPathSchema,
    existsOn: sideSchema,
    value: jsonValue('Value always written on the side that declares the field.'),
  })
  .meta({ description: 'Force a field to a fixed value on the side that declares it.' });
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

export const enumMappingSchema = z.object({ hub: enumValueSchema, spoke: enumValueSchema });
export type EnumMapping = z.infer<typeof enumMappingSchema>;

export const enumRemapParamsSchema = z
  .object({
    path: fieldPathSchema,
    mapping: z.array(enumMappingSchema).min(1).max(MAX_ENUM_MAPPINGS),
    onUnmappedHubValue: unmappedValuePolicySchema.default('Error'),
    onUnmappedSpokeValue: unmappedValuePolicySchema.default('Error'),
  })
  .meta({ description: 'Map the values of an enumerated scalar field between hub and spoke.' });
export type EnumRemapParams = z.infer<typeof enumRemapParamsSchema>;

export const ruleConditionSchema = z
  .object({
    path: fieldPathSchema,
    equals: jsonValue('The rule applies only when the field at path equals this value.'),
  })
  .meta({ description: 'Apply the rule only to objects whose field at path equals a value.' });
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

export const fieldRenameRuleSchema = z.object({
  strategy: z.literal('FieldRename'),
  fieldRename: fieldRenameParamsSchema,
  ...ruleCommon,
});
export const deleteRuleSchema = z.object({
  strategy: z.literal('Delete'),
  delete: deleteParamsSchema,
  ...ruleCommon,
});
export const defaultValueRuleSchema = z.object({
  strategy: z.literal('DefaultValue'),
  defaultValue: defaultValueParamsSchema,
  ...ruleCommon,
});
export const constantRuleSchema = z.object({
  strategy: z.literal('Constant'),
  constant: constantParamsSchema,
  ...ruleCommon,
});
export const enumRemapRuleSchema = z.object({
  strategy: z.literal('EnumRemap'),
  enumRemap: enumRemapParamsSchema,
  ...ruleCommon,
});

/**
 * One conversion rule. A discriminated union on `strategy`, so the params block that matches
 * the strategy is required and typed; the CRD states the same constraint as a CEL rule.
 */
export const ruleSchema = z
  .discriminatedUnion('strategy', [
    fieldRenameRuleSchema,
    deleteRuleSchema,
    defaultValueRuleSchema,
    constantRuleSchema,
    enumRemapRuleSchema,
  ])
  .meta({ description: 'One conversion rule: a strategy and exactly the params block named after it.' });
export type Rule = z.infer<typeof ruleSchema>;
export type FieldRenameRule = z.infer<typeof fieldRenameRuleSchema>;
export type DeleteRule = z.infer<typeof deleteRuleSchema>;
export type DefaultValueRule = z.infer<typeof defaultValueRuleSchema>;
export type ConstantRule = z.infer<typeof constantRuleSchema>;
export type EnumRemapRule = z.infer<typeof enumRemapRuleSchema>;
