// Conversion rules: the declarative vocabulary a config uses to say how one spoke version maps
// to the hub. The shape is the reference conversion operator's, so its users read it without a
// manual and bring their configs unchanged: `strategy` names one of 29 strategies (PascalCase,
// like every Kubernetes enum), and exactly one params block, keyed by the strategy's camelCase
// name, carries its arguments (rule-params.ts). `acknowledgeLossy` and `reason` sit beside it
// because the compiler fails closed on a lossy rule that nobody acknowledged.
//
// This file is shared: the conversion engine compiles these rules, the CRD generator emits their
// OpenAPI shape. Paths are dotted field paths relative to the object root (`spec.size`), the
// engine owns their finer grammar.
import { z } from 'zod';
import { jsonValue } from './openapi.ts';
import {
  arrayToMapByKeyParamsSchema,
  celParamsSchema,
  constantParamsSchema,
  defaultValueParamsSchema,
  deleteParamsSchema,
  durationParamsSchema,
  enumRemapParamsSchema,
  fieldPathSchema,
  fieldRenameParamsSchema,
  fieldsToMapParamsSchema,
  fieldsToScalarParamsSchema,
  fromAnnotationParamsSchema,
  fromLabelParamsSchema,
  jsonPatchParamsSchema,
  listJoinParamsSchema,
  listSplitParamsSchema,
  mapKeyRenameParamsSchema,
  mapToArrayByKeyParamsSchema,
  mapToFieldsParamsSchema,
  numericScaleParamsSchema,
  objectToScalarParamsSchema,
  objectToSingletonArrayParamsSchema,
  quantityParamsSchema,
  scalarToFieldsParamsSchema,
  scalarToObjectParamsSchema,
  singletonArrayToObjectParamsSchema,
  toAnnotationParamsSchema,
  toLabelParamsSchema,
  typeCoerceParamsSchema,
} from './rule-params.ts';
import { PARAMS_KEY, STRATEGIES, type Strategy } from './strategy-names.ts';
import { strictObject } from './strict-object.ts';

export * from './rule-params.ts';
export { PARAMS_KEY, type ParamsKey, STRATEGIES, type Strategy } from './strategy-names.ts';
export { strictObject } from './strict-object.ts';

export const strategySchema = z.enum(STRATEGIES);

const MAX_REASON_LENGTH = 4096;
const MAX_RULES = 256;
/** ForEach may wrap a ForEach (arrays of arrays); a third level is refused, as by the reference. */
export const MAX_FOR_EACH_DEPTH = 2;

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

type Variant<S extends Strategy, P extends z.ZodType> = z.ZodObject<
  { strategy: z.ZodLiteral<S> } & { [K in (typeof PARAMS_KEY)[S]]: P } & typeof ruleCommon,
  z.core.$strict
>;

function variant<S extends Strategy, P extends z.ZodType>(strategy: S, params: P): Variant<S, P> {
  const shape = { strategy: z.literal(strategy), [PARAMS_KEY[strategy]]: params, ...ruleCommon };
  return strictObject(`a ${strategy} rule`, shape) as unknown as Variant<S, P>;
}

/** Every strategy but ForEach, whose rules nest: it is added per level below. */
const flatVariants = [
  variant('FieldRename', fieldRenameParamsSchema),
  variant('ScalarToObject', scalarToObjectParamsSchema),
  variant('ObjectToScalar', objectToScalarParamsSchema),
  variant('SingletonArrayToObject', singletonArrayToObjectParamsSchema),
  variant('ObjectToSingletonArray', objectToSingletonArrayParamsSchema),
  variant('FieldsToMap', fieldsToMapParamsSchema),
  variant('MapToFields', mapToFieldsParamsSchema),
  variant('ToAnnotation', toAnnotationParamsSchema),
  variant('ToLabel', toLabelParamsSchema),
  variant('FromAnnotation', fromAnnotationParamsSchema),
  variant('FromLabel', fromLabelParamsSchema),
  variant('EnumRemap', enumRemapParamsSchema),
  variant('DefaultValue', defaultValueParamsSchema),
  variant('Constant', constantParamsSchema),
  variant('Delete', deleteParamsSchema),
  variant('JSONPatch', jsonPatchParamsSchema),
  variant('TypeCoerce', typeCoerceParamsSchema),
  variant('ScalarToFields', scalarToFieldsParamsSchema),
  variant('FieldsToScalar', fieldsToScalarParamsSchema),
  variant('ArrayToMapByKey', arrayToMapByKeyParamsSchema),
  variant('MapToArrayByKey', mapToArrayByKeyParamsSchema),
  variant('NumericScale', numericScaleParamsSchema),
  variant('ListJoin', listJoinParamsSchema),
  variant('ListSplit', listSplitParamsSchema),
  variant('Quantity', quantityParamsSchema),
  variant('Duration', durationParamsSchema),
  variant('MapKeyRename', mapKeyRenameParamsSchema),
  variant('CEL', celParamsSchema),
] as const;

/**
 * ForEach's params over a given schema of its nested rules. The CRD keeps the nested rules
 * schemaless, as the reference does (a structural schema cannot recurse); the admission webhook
 * checks them with the zod schema, which spells each level out rather than recursing, so the
 * config's parser compiles ahead of time (api/json-value.ts says why that matters).
 */
function forEachParams<R extends z.ZodType>(nested: R) {
  return strictObject('forEach', {
    hubItemsPath: fieldPathSchema,
    spokeItemsPath: fieldPathSchema,
    rules: z.array(nested).min(1).max(MAX_RULES).meta({
      description: 'Rules applied to each element; their paths are relative to one element.',
      'x-kubernetes-preserve-unknown-fields': true,
    }),
  }).meta({
    description: 'Nested rules applied to each element of a hub array and the spoke array at the same index.',
  });
}

/** The variants in the order of STRATEGIES, which the CRD's enum and the messages list. */
function unionOf<V extends readonly [z.ZodObject, ...z.ZodObject[]]>(variants: V) {
  const position = (v: z.ZodObject) => STRATEGIES.indexOf(v.shape.strategy.value as Strategy);
  const ordered = [...variants].sort((a, b) => position(a) - position(b)) as unknown as V;
  return z
    .discriminatedUnion('strategy', ordered, {
      error: (issue) => (issue.code === 'invalid_union' ? unknownStrategyMessage(issue.input) : undefined),
    })
    .meta({ description: 'One conversion rule: a strategy and exactly the params block named after it.' });
}

/** A rule inside a ForEach inside a ForEach: no further ForEach. */
const innermostRuleSchema = unionOf(flatVariants);
const nestedRuleSchema = unionOf([
  ...flatVariants,
  variant('ForEach', forEachParams(innermostRuleSchema)),
] as const);

/**
 * One conversion rule. A discriminated union on `strategy`, so the params block that matches
 * the strategy is required and typed; the CRD states the same constraint as CEL rules.
 */
export const ruleSchema = unionOf([
  ...flatVariants,
  variant('ForEach', forEachParams(nestedRuleSchema)),
] as const);
export type Rule = z.infer<typeof ruleSchema>;

/** The rule of one strategy. */
export type RuleOf<S extends Strategy> = Extract<Rule, { strategy: S }>;

export function unknownStrategyMessage(rule: unknown): string {
  const strategy =
    typeof rule === 'object' && rule !== null ? (rule as { strategy?: unknown }).strategy : undefined;
  const rejected =
    strategy === undefined ? 'a rule without a strategy' : `strategy ${JSON.stringify(strategy)}`;
  return `${rejected} is not supported; the supported strategies are ${STRATEGIES.join(', ')}`;
}
export type FieldRenameRule = RuleOf<'FieldRename'>;
export type DeleteRule = RuleOf<'Delete'>;
export type DefaultValueRule = RuleOf<'DefaultValue'>;
export type ConstantRule = RuleOf<'Constant'>;
export type EnumRemapRule = RuleOf<'EnumRemap'>;
