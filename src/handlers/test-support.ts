// Shared by the handlers' unit tests: a view holding fixed objects, answering the reads
// handlers make (record, list, renewTime) the way ObjectView does, and never waiting.
import type { RecordedObject } from '../bus/messages.ts';
import type { ObjectKey } from '../bus/subjects.ts';
import type { ObjectView } from '../bus/view.ts';

export type FakeView = Pick<ObjectView, 'waitFor' | 'list' | 'record' | 'renewTime'>;

/** `objects` as `[kind, object]`; a Lease's renewTime is its recorded one. */
export function fakeView(
  objects: ReadonlyArray<readonly [string, RecordedObject]>,
  observedAtMs = 0,
): FakeView {
  const find = (key: ObjectKey) =>
    objects.find(
      ([k, o]) =>
        k === key.kind && o.metadata.name === key.name && (o.metadata.namespace ?? '') === key.namespace,
    )?.[1];
  return {
    waitFor: () => Promise.resolve(),
    list: (kind) => objects.filter(([k]) => k === kind).map(([, o]) => o),
    record: (key) => {
      const o = find(key);
      return (
        o && {
          op: 'upsert',
          object: o,
          observedBy: 'watch',
          observedAt: new Date(observedAtMs).toISOString(),
        }
      );
    },
    renewTime: (key) => (find(key) as { spec?: { renewTime?: string } } | undefined)?.spec?.renewTime,
  };
}
