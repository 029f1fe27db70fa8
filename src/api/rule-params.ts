// The params block of each strategy: the arguments a rule of that strategy takes, named and
// shaped as the reference conversion operator names them, so its configs load unchanged. What
// each strategy does with them is the engine's (src/engine/strategies/); the bounds here only
// keep the apiserver's CEL cost estimate for the CRD's validations finite.
import { z } from 'zod';
import { jsonValue } from './openapi.ts';
import { strictObject } from './strict-object.ts';

const MAX_PATH_LENGTH = 1024;
const MAX_PATHS = 64;
const MAX_ENUM_MAPPINGS = 256;
const MAX_PATCH_OPS = 64;
const MAX_EXPRESSION_LENGTH = 16_384;
const MAX_KEY_LENGTH = 316; // a qualified annotation or label key: 253-character prefix, '/', 63-character name

export const fieldPathSchema = z
  .string()
  .min(1)
  .max(MAX_PATH_LENGTH)
  .meta({ description: 'Dotted path of a field from the object root, e.g. spec.size.' });

const fieldPaths = (description: string) =>
  z.array(fieldPathSchema).min(1).max(MAX_PATHS).meta({ description });

/** A map from a name (a capture group, a key) to a field path. */
const pathsByName = (description: string) =>
  z.record(z.string().max(MAX_PATH_LENGTH), fieldPathSchema).meta({ description });

const stringMap = (description: string) =>
  z.record(z.string().max(MAX_PATH_LENGTH), z.string().max(MAX_PATH_LENGTH)).meta({ description });

export const sideSchema = z
  .enum(['Hub', 'Spoke'])
  .meta({ description: 'Which version of the pair declares the field.' });
export type Side = z.infer<typeof sideSchema>;

export const unmappedValuePolicySchema = z.enum(['Error', 'Drop']).meta({
  description: 'What to do with a value the mapping does not list: fail the conversion, or drop it.',
});
export type UnmappedValuePolicy = z.infer<typeof unmappedValuePolicySchema>;

const unknownKeyPolicy = (description: string) =>
  z.enum(['Error', 'Drop']).default('Error').meta({ description });

const losslessOverride = z.boolean().default(false).meta({
  description:
    'Assert that this rule loses nothing, which the engine cannot prove for it; the rule is then counted lossless.',
});

// --- moves and reshapes of one field

export const fieldRenameParamsSchema = strictObject('fieldRename', {
  hubPath: fieldPathSchema,
  spokePath: fieldPathSchema,
}).meta({ description: 'The field moved: same value and shape, a different path.' });
export type FieldRenameParams = z.infer<typeof fieldRenameParamsSchema>;

const scalarObjectShape = {
  hubPath: fieldPathSchema,
  spokePath: fieldPathSchema,
  key: z
    .string()
    .min(1)
    .max(MAX_PATH_LENGTH)
    .meta({ description: 'The key of the object that holds the scalar.' }),
  defaultsForOtherKeys: z
    .record(z.string().max(MAX_PATH_LENGTH), jsonValue('A value for the key.'))
    .optional()
    .meta({
      description: "Values for the object's other keys, written when the object is built from the scalar.",
    }),
};
export const scalarToObjectParamsSchema = strictObject('scalarToObject', scalarObjectShape).meta({
  description: 'The hub field is a scalar; the spoke field is an object holding it under key.',
});
export type ScalarToObjectParams = z.infer<typeof scalarToObjectParamsSchema>;
export const objectToScalarParamsSchema = strictObject('objectToScalar', scalarObjectShape).meta({
  description: 'The hub field is an object; the spoke field is the scalar under its key.',
});
export type ObjectToScalarParams = z.infer<typeof objectToScalarParamsSchema>;

const pathPair = { hubPath: fieldPathSchema, spokePath: fieldPathSchema };

export const singletonArrayToObjectParamsSchema = strictObject('singletonArrayToObject', pathPair).meta({
  description: "The hub field is an array; the spoke field is an object, the array's first element.",
});
export type SingletonArrayToObjectParams = z.infer<typeof singletonArrayToObjectParamsSchema>;
export const objectToSingletonArrayParamsSchema = strictObject('objectToSingletonArray', pathPair).meta({
  description: 'The hub field is an object; the spoke field is an array holding it as its only element.',
});
export type ObjectToSingletonArrayParams = z.infer<typeof objectToSingletonArrayParamsSchema>;

// --- several fields and one map

export const fieldsToMapParamsSchema = strictObject('fieldsToMap', {
  hubPaths: fieldPaths('The hub fields gathered into the map.'),
  spokeMapPath: fieldPathSchema,
  keyNames: stringMap(
    'Map key of each hub path (hub path → key); a path not listed uses its last segment.',
  ).optional(),
  onUnknownSpokeKey: unknownKeyPolicy('A spoke map key no hub field takes: fail the conversion, or drop it.'),
}).meta({ description: 'Several hub fields become one spoke map.' });
export type FieldsToMapParams = z.infer<typeof fieldsToMapParamsSchema>;

export const mapToFieldsParamsSchema = strictObject('mapToFields', {
  hubMapPath: fieldPathSchema,
  spokePaths: fieldPaths('The spoke fields the map is spread into.'),
  keyNames: stringMap(
    'Map key of each spoke path (spoke path → key); a path not listed uses its last segment.',
  ).optional(),
  onUnknownHubKey: unknownKeyPolicy('A hub map key no spoke field takes: fail the conversion, or drop it.'),
}).meta({ description: 'One hub map becomes several spoke fields.' });
export type MapToFieldsParams = z.infer<typeof mapToFieldsParamsSchema>;

// --- the metadata stash

const stashKey = z
  .string()
  .min(1)
  .max(MAX_KEY_LENGTH)
  .meta({ description: 'The annotation or label key that holds the value.' });
const serialization = z
  .enum(['JSON', 'String'])
  .default('JSON')
  .meta({ description: 'JSON: the value as JSON text; String: a string value as it is.' });

const toMetadataShape = {
  hubPath: fieldPathSchema,
  key: stashKey,
  serialization,
  restoreOnReverse: z.boolean().default(false).meta({
    description: 'Converting back to the hub, restore the field from the stash (and remove the stash).',
  }),
};
export const toAnnotationParamsSchema = strictObject('toAnnotation', toMetadataShape).meta({
  description: 'A hub-only field is kept in a spoke annotation.',
});
export const toLabelParamsSchema = strictObject('toLabel', toMetadataShape).meta({
  description: 'A hub-only field is kept in a spoke label.',
});
export type ToMetadataParams = z.infer<typeof toAnnotationParamsSchema>;

const stashOnReverse = z.boolean().default(false).meta({
  description: 'Converting to the hub, stash the field in hub metadata.',
});
export const fromAnnotationParamsSchema = strictObject('fromAnnotation', {
  spokePath: fieldPathSchema,
  key: stashKey,
  serialization,
  stashOnReverse,
}).meta({ description: 'A spoke-only field is restored from a hub annotation.' });
// JSON-quoted values are not valid label values: a label stash holds strings only.
export const fromLabelParamsSchema = strictObject('fromLabel', {
  spokePath: fieldPathSchema,
  key: stashKey,
  serialization: z.enum(['String']).default('String').meta({ description: 'Labels hold strings only.' }),
  stashOnReverse,
}).meta({ description: 'A spoke-only field is restored from a hub label.' });
export type FromMetadataParams = z.infer<typeof fromAnnotationParamsSchema>;

// --- values

/**
 * One enumerated value: a string, an integer, a number or a boolean. A structural schema cannot
 * say "one of these scalar types", so the CRD keeps it schemaless and the zod schema
 * (admission) and the compiler (against the target's schema) check it.
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

export const deleteParamsSchema = strictObject('delete', {
  path: fieldPathSchema,
  existsOn: sideSchema,
}).meta({ description: 'Drop a field that only one side declares. Always lossy towards the other side.' });
export type DeleteParams = z.infer<typeof deleteParamsSchema>;

export const typeCoerceParamsSchema = strictObject('typeCoerce', {
  path: fieldPathSchema,
  onFractionalInteger: z.enum(['Error', 'Truncate', 'Round']).default('Error').meta({
    description: 'A number with a fraction converted into an integer field: fail, truncate, or round.',
  }),
}).meta({
  description: 'A scalar field whose JSON type differs between hub and spoke (e.g. string and integer).',
});
export type TypeCoerceParams = z.infer<typeof typeCoerceParamsSchema>;

export const numericScaleParamsSchema = strictObject('numericScale', {
  ...pathPair,
  factor: z.number().meta({ description: 'hub value = spoke value × factor.' }),
}).meta({ description: 'A number scaled by a fixed factor between hub and spoke.' });
export type NumericScaleParams = z.infer<typeof numericScaleParamsSchema>;

export const quantityParamsSchema = strictObject('quantity', pathPair).meta({
  description: 'A Kubernetes quantity string on one side, an integer millivalue on the other.',
});
export type QuantityParams = z.infer<typeof quantityParamsSchema>;

export const durationParamsSchema = strictObject('duration', pathPair).meta({
  description: 'A duration string (e.g. 1h30m) on one side, whole seconds on the other.',
});
export type DurationParams = z.infer<typeof durationParamsSchema>;

// --- strings and lists

const splitJoin = {
  pattern: z.string().min(1).max(MAX_EXPRESSION_LENGTH).meta({
    description: 'A regular expression (RE2 syntax) whose named capture groups name the fields.',
  }),
  joinTemplate: z.string().max(MAX_EXPRESSION_LENGTH).meta({
    description: 'A Go text/template over the same group names, e.g. {{.value}}{{.unit}}.',
  }),
  losslessOverride,
};
export const scalarToFieldsParamsSchema = strictObject('scalarToFields', {
  hubPath: fieldPathSchema,
  spokeFields: pathsByName('The spoke field each capture group fills.'),
  ...splitJoin,
}).meta({ description: 'A hub string split into several spoke fields, and joined back.' });
export type ScalarToFieldsParams = z.infer<typeof scalarToFieldsParamsSchema>;

export const fieldsToScalarParamsSchema = strictObject('fieldsToScalar', {
  hubFields: pathsByName('The hub field each capture group reads.'),
  spokePath: fieldPathSchema,
  ...splitJoin,
}).meta({ description: 'Several hub fields joined into one spoke string, and split back.' });
export type FieldsToScalarParams = z.infer<typeof fieldsToScalarParamsSchema>;

const separator = z
  .string()
  .min(1)
  .max(MAX_PATH_LENGTH)
  .meta({ description: 'The separator between items.' });
export const listJoinParamsSchema = strictObject('listJoin', { ...pathPair, separator }).meta({
  description: 'A hub list of scalars joined into one spoke string.',
});
export type ListJoinParams = z.infer<typeof listJoinParamsSchema>;
export const listSplitParamsSchema = strictObject('listSplit', { ...pathPair, separator }).meta({
  description: 'A hub string split into a spoke list of scalars.',
});
export type ListSplitParams = z.infer<typeof listSplitParamsSchema>;

// --- arrays and maps

const keyField = z
  .string()
  .min(1)
  .max(MAX_PATH_LENGTH)
  .meta({ description: "The element field whose value is the element's map key." });
export const arrayToMapByKeyParamsSchema = strictObject('arrayToMapByKey', { ...pathPair, keyField }).meta({
  description: 'A hub array of objects becomes a spoke map keyed by each element’s keyField.',
});
export type ArrayToMapByKeyParams = z.infer<typeof arrayToMapByKeyParamsSchema>;
export const mapToArrayByKeyParamsSchema = strictObject('mapToArrayByKey', { ...pathPair, keyField }).meta({
  description: 'A hub map becomes a spoke array of objects, each key stored in keyField.',
});
export type MapToArrayByKeyParams = z.infer<typeof mapToArrayByKeyParamsSchema>;

export const mapKeyRenameParamsSchema = strictObject('mapKeyRename', {
  ...pathPair,
  renames: z
    .record(z.string().max(MAX_PATH_LENGTH), z.string().max(MAX_PATH_LENGTH))
    .refine((renames) => Object.keys(renames).length > 0, 'renames needs at least one entry')
    .meta({ description: 'Hub key → spoke key; other keys keep their names.' }),
}).meta({ description: 'Known keys of a free-form map renamed between hub and spoke.' });
export type MapKeyRenameParams = z.infer<typeof mapKeyRenameParamsSchema>;

// --- escape hatches

export const jsonPatchOperationSchema = strictObject('a JSON Patch operation', {
  op: z.enum(['add', 'remove', 'replace', 'move', 'copy', 'test']),
  path: z.string().max(MAX_PATH_LENGTH).meta({ description: 'A JSON Pointer (RFC 6901).' }),
  from: z
    .string()
    .max(MAX_PATH_LENGTH)
    .optional()
    .meta({ description: 'A JSON Pointer, for move and copy.' }),
  value: jsonValue('The value, for add, replace and test.').optional(),
});
export type JsonPatchOperation = z.infer<typeof jsonPatchOperationSchema>;

export const jsonPatchParamsSchema = strictObject('jsonPatch', {
  hubToSpoke: z.array(jsonPatchOperationSchema).max(MAX_PATCH_OPS).optional(),
  spokeToHub: z.array(jsonPatchOperationSchema).max(MAX_PATCH_OPS).optional(),
  losslessOverride,
}).meta({ description: 'RFC 6902 JSON Patch documents applied to the input, per direction.' });
export type JsonPatchParams = z.infer<typeof jsonPatchParamsSchema>;

const celExpression = (direction: string) =>
  z
    .string()
    .min(1)
    .max(MAX_EXPRESSION_LENGTH)
    .meta({
      description: `A CEL expression over \`object\` (the input) returning a map from destination path to value, ${direction}.`,
    });
export const celParamsSchema = strictObject('cel', {
  hubPaths: fieldPaths('The hub fields the expressions read and write.'),
  spokePaths: fieldPaths('The spoke fields the expressions read and write.'),
  hubToSpoke: celExpression('hub → spoke'),
  spokeToHub: celExpression('spoke → hub'),
}).meta({ description: 'CEL expressions per direction. Always lossy.' });
export type CelParams = z.infer<typeof celParamsSchema>;
