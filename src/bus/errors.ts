/**
 * The one place that reads a JetStream API failure: by its API code
 * (`JetStreamApiCodes`, plus the codes nats.js does not name, from nats-server's
 * `errors.json`), never by message text, which the server is free to reword.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

/** Codes nats.js 3.4 does not name (nats-server `server/errors.json`). */
export const MORE_JETSTREAM_API_CODES = {
  /** JetStream not enabled on the server (503). */
  JetStreamNotEnabled: 10076,
  /** 2.10+: `add` of an existing durable with a different config. */
  ConsumerAlreadyExists: 10148,
  /** A stream or consumer of more than one replica asked of a server that is not clustered. */
  StreamReplicasNotSupported: 10074,
  /** No peers for the placement: fewer servers (with JetStream, in the cluster or tags) than replicas. */
  ClusterNoPeers: 10005,
  /** Not enough resources in the cluster for the asset (503). */
  InsufficientResources: 10023,
  /**
   * A clustered stream's leader is still storing another publish with the same message id (two
   * watcher replicas recording one change at once): a publish again gets the duplicate ack.
   */
  DuplicateMessageInProcess: 10158,
} as const;

/** The JetStream API code of a failure, or undefined when it is not a JetStream API error. */
export function jetStreamApiCode(err: unknown): number | undefined {
  return err instanceof JetStreamApiError ? err.code : undefined;
}

export const isStreamNotFound = (err: unknown): boolean =>
  jetStreamApiCode(err) === JetStreamApiCodes.StreamNotFound;
export const isConsumerNotFound = (err: unknown): boolean =>
  jetStreamApiCode(err) === JetStreamApiCodes.ConsumerNotFound;
export const isConsumerAlreadyExists = (err: unknown): boolean =>
  jetStreamApiCode(err) === MORE_JETSTREAM_API_CODES.ConsumerAlreadyExists;
/** 10071: an `expect: { lastSubjectSequence }` publish lost to another writer (optimistic concurrency). */
export const isWrongLastSequence = (err: unknown): boolean =>
  jetStreamApiCode(err) === JetStreamApiCodes.StreamWrongLastSequence;
/** 10158: the same message id is being stored by another publish; retrying is answered as a duplicate. */
export const isDuplicateInProcess = (err: unknown): boolean =>
  jetStreamApiCode(err) === MORE_JETSTREAM_API_CODES.DuplicateMessageInProcess;
/** More than one replica, asked of a single server. */
export const isReplicasNotSupported = (err: unknown): boolean =>
  jetStreamApiCode(err) === MORE_JETSTREAM_API_CODES.StreamReplicasNotSupported;
/** A clustered server found no place for every replica asked: too few servers up, or too small. */
export const isNoRoomForReplicas = (err: unknown): boolean => {
  const code = jetStreamApiCode(err);
  return (
    code === MORE_JETSTREAM_API_CODES.ClusterNoPeers ||
    code === MORE_JETSTREAM_API_CODES.InsufficientResources
  );
};
/** JetStream is off for the server or the account: the bus is not (yet) there. */
export const isJetStreamUnavailable = (err: unknown): boolean => {
  const code = jetStreamApiCode(err);
  return (
    code === JetStreamApiCodes.JetStreamNotEnabledForAccount ||
    code === MORE_JETSTREAM_API_CODES.JetStreamNotEnabled ||
    (err instanceof JetStreamApiError && err.status === 503)
  );
};
