// An object schema that rejects the fields it does not declare, naming them: a field the user
// wrote and the engine ignored would be a silent difference between the config and what it
// does. A rule's params blocks get a message of their own: one rule takes exactly one.
import { z } from 'zod';
import { PARAMS_KEY } from './strategy-names.ts';

/** `what` names the object in the message, e.g. "a FieldRename rule". */
export function strictObject<Shape extends z.core.$ZodLooseShape>(what: string, shape: Shape) {
  const known = Object.keys(shape).join(', ');
  return z.strictObject(shape, {
    error: (issue) =>
      issue.code === 'unrecognized_keys' ? unknownFieldsMessage(what, issue.keys, known) : undefined,
  });
}

const PARAMS_KEYS = new Set<string>(Object.values(PARAMS_KEY));

function unknownFieldsMessage(what: string, keys: readonly string[], known: string): string {
  const params = keys.filter((k) => PARAMS_KEYS.has(k));
  const others = keys.filter((k) => !PARAMS_KEYS.has(k));
  const parts: string[] = [];
  if (params.length > 0) {
    parts.push(
      `${what} takes exactly one params block, the one named after its strategy; remove ${params.join(', ')} (or move it into a rule of its own)`,
    );
  }
  if (others.length > 0) parts.push(`${what} has no field ${others.join(', ')} (its fields: ${known})`);
  return parts.join('; ');
}
