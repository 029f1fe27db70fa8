// Shared by the handlers' unit tests: a view holding fixed objects, answering the reads
// handlers make (record, list, renewTime, whole) the way ObjectView does, and never waiting. It
// keeps what the handlers' views keep (HANDLER_VIEW_PROJECTIONS), so a test of a handler fails when the
// handler reads a field its view no longer holds.
import type { RecordedObject } from '../bus/messages.ts';
import type { ObjectKey } from '../bus/subjects.ts';
import type { ObjectView } from '../bus/view.ts';
import { HANDLER_VIEW_PROJECTIONS, type ViewProjections } from '../views/projection.ts';

export type FakeView = Pick<ObjectView, 'waitFor' | 'list' | 'record' | 'renewTime' | 'whole'>;

/** `objects` as `[kind, object]`; a Lease's renewTime is its recorded one. */
export function fakeView(
  objects: ReadonlyArray<readonly [string, RecordedObject]>,
  observedAtMs = 0,
  projections: ViewProjections = HANDLER_VIEW_PROJECTIONS,
): FakeView {
  const held = objects.map(([kind, whole], i) => {
    const project = projections[kind];
    return {
      kind,
      whole,
      object: project ? project(whole) : whole,
      projected: project !== undefined,
      seq: i + 1,
    };
  });
  const find = (key: ObjectKey) =>
    held.find(
      (h) =>
        h.kind === key.kind &&
        h.object.metadata.name === key.name &&
        (h.object.metadata.namespace ?? '') === key.namespace,
    );
  return {
    waitFor: () => Promise.resolve(),
    list: (kind) => held.filter((h) => h.kind === kind).map((h) => h.object),
    record: (key) => {
      const h = find(key);
      return (
        h && {
          op: 'upsert',
          object: h.object,
          observedBy: 'watch',
          observedAt: new Date(observedAtMs).toISOString(),
          ...(h.projected ? { projected: true, seq: h.seq } : {}),
        }
      );
    },
    whole: (key) => Promise.resolve(find(key)?.whole),
    renewTime: (key) => (find(key)?.object as { spec?: { renewTime?: string } } | undefined)?.spec?.renewTime,
  };
}
