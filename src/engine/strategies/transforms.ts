// Which code resolves each strategy: one entry per strategy, its resolution in the file of its
// family.
import type { RuleOf, Strategy } from '../../api/rules.ts';
import { arrayMapKey } from './array-map-key.ts';
import { cel } from './cel.ts';
import type { Located, TransformResult } from './common.ts';
import { enumRemap } from './enum-remap.ts';
import { fieldRename } from './field-rename.ts';
import { fieldsMap } from './fields-map.ts';
import { forEach } from './for-each.ts';
import { jsonPatch } from './json-patch.ts';
import { listJoinSplit } from './list-join-split.ts';
import { mapKeyRename } from './map-key-rename.ts';
import { metadataStash } from './metadata-stash.ts';
import { numericScale } from './numeric-scale.ts';
import { deleteField, injectValue } from './one-sided.ts';
import { quantityDuration } from './quantity-duration.ts';
import { scalarFields } from './scalar-fields.ts';
import { scalarObject } from './scalar-object.ts';
import { singletonArray } from './singleton-array.ts';
import { typeCoerce } from './type-coerce.ts';

export type TransformOf<S extends Strategy> = (rule: RuleOf<S>, at: Located) => TransformResult;

export const TRANSFORMS: { [S in Strategy]: TransformOf<S> } = {
  FieldRename: fieldRename,
  Delete: deleteField,
  DefaultValue: (rule, at) => injectValue(rule, rule.defaultValue.default, at),
  Constant: (rule, at) => injectValue(rule, rule.constant.value, at),
  EnumRemap: enumRemap,
  ScalarToObject: scalarObject,
  ObjectToScalar: scalarObject,
  SingletonArrayToObject: singletonArray,
  ObjectToSingletonArray: singletonArray,
  FieldsToMap: fieldsMap,
  MapToFields: fieldsMap,
  ArrayToMapByKey: arrayMapKey,
  MapToArrayByKey: arrayMapKey,
  MapKeyRename: mapKeyRename,
  ForEach: forEach,
  ToAnnotation: metadataStash,
  ToLabel: metadataStash,
  FromAnnotation: metadataStash,
  FromLabel: metadataStash,
  JSONPatch: jsonPatch,
  TypeCoerce: typeCoerce,
  NumericScale: numericScale,
  ScalarToFields: scalarFields,
  FieldsToScalar: scalarFields,
  ListJoin: listJoinSplit,
  ListSplit: listJoinSplit,
  Quantity: quantityDuration,
  Duration: quantityDuration,
  CEL: cel,
};
