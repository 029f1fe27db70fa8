/**
 * What a watcher does when a watch ends: relist (the position may be lost or
 * a change may be unrecorded) and/or back off (the apiserver or the bus is in
 * trouble; retrying at once would spin). Pure, so each case is tested.
 */
import { isGone } from '../kube/errors.ts';

export interface WatchEnd {
  /** The ERROR event the watch sent before it ended, if any (a metav1.Status). */
  errorEvent?: { code?: number; reason?: string; message?: string };
  /** The error the watch ended with, if any (network, HTTP status, client timeout). */
  err?: unknown;
  /** A change could not be stored on the bus: the stream is behind the watch's position. */
  recordFailed: boolean;
}

export interface NextStep {
  relist: boolean;
  backoff: boolean;
}

export function nextStep(end: WatchEnd): NextStep {
  // The position moved past a change the bus does not have: only a relist,
  // compared with what the bus holds, can close that gap.
  if (end.recordFailed) return { relist: true, backoff: true };
  if (end.errorEvent) {
    // 410: the position fell behind a compaction, the normal way to need a relist.
    // Anything else (e.g. "too large resource version" after an etcd restore) also
    // means the position cannot be resumed, but the apiserver is unwell: wait first.
    return { relist: true, backoff: !isGone(end.errorEvent) };
  }
  if (isGone(end.err)) return { relist: true, backoff: false };
  const timedOut = (end.err as { name?: string } | null)?.name === 'TimeoutError';
  // A normal close or the client's timeout: resume from the position at once.
  if (!end.err || timedOut) return { relist: false, backoff: false };
  // A network error: resume from the position (a 410 then tells if it is lost), after a pause.
  return { relist: false, backoff: true };
}
