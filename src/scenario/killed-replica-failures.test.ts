import { describe, expect, it } from 'vitest';
import { killedReplicaFailure } from './killed-replica-failures.ts';

const KILLED = {
  addresses: ['127.0.0.1:36627'],
  serviceHost: 'chaos-a-webhook-server.switchyard-system.svc',
};
const POST =
  'Post "https://chaos-a-webhook-server.switchyard-system.svc:443/convert/bolts.chaos.switchyard.dev?timeout=30s"';
const FAILED = 'conversion webhook for chaos.switchyard.dev/v2, Kind=Widget failed';

// The messages are the apiserver's, as the chaos suite's clients got them.
describe('which failed requests a killed replica explains', () => {
  it.each([
    {
      scenario: 'a call dialed to the killed Pod after it died',
      message: `${FAILED}: ${POST}: dial tcp 127.0.0.1:36627: connect: connection refused`,
      explained: 'dialed',
    },
    {
      scenario: 'a read of a stored object whose conversion was dialed to it',
      message:
        'Internal error occurred: StorageError: corrupt object, Code: 7, Key: /chaos.switchyard.dev/bolts/chaos-load/w1-o2, ' +
        `ResourceVersion: 0, AdditionalErrorMsg: object not decodable revision=5606: ${FAILED}: ${POST}: dial tcp 127.0.0.1:36627: connect: connection refused`,
      explained: 'dialed',
    },
    {
      scenario: 'a call in flight when it died',
      message: `${FAILED}: ${POST}: read tcp 127.0.0.1:51234->127.0.0.1:36627: read: connection reset by peer`,
      explained: 'dialed',
    },
    {
      scenario: 'a call whose connection to its Service closed with no answer',
      message: `${FAILED}: ${POST}: EOF`,
      explained: 'cut',
    },
    {
      scenario: 'the other replica of the instance refusing',
      message: `${FAILED}: ${POST}: dial tcp 127.0.0.1:36628: connect: connection refused`,
      explained: undefined,
    },
    {
      scenario: 'an address that only starts like the killed one',
      message: `${FAILED}: ${POST}: dial tcp 127.0.0.1:366270: connect: connection refused`,
      explained: undefined,
    },
    {
      scenario: 'a connection to the other instance cut',
      message: `${FAILED}: Post "https://chaos-b-webhook-server.switchyard-system.svc:443/convert/bolts.chaos.switchyard.dev?timeout=30s": EOF`,
      explained: undefined,
    },
    {
      scenario: 'a replica that answers without a plan',
      message:
        'conversion webhook for chaos.switchyard.dev/v2, Kind=Gadget failed: this replica holds no conversion plan ' +
        'for gadgets.chaos.switchyard.dev: no config converts it',
      explained: undefined,
    },
    {
      scenario: 'a replica that hangs',
      message: `${FAILED}: ${POST}: net/http: TLS handshake timeout`,
      explained: undefined,
    },
    {
      scenario: 'the storage rebuilt after a repoint',
      message: 'storage is (re)initializing',
      explained: undefined,
    },
    {
      scenario: 'a refused request that names the address',
      message: 'admission webhook denied the request: dial tcp 127.0.0.1:36627: connect: connection refused',
      explained: undefined,
    },
  ])('$scenario → $explained', ({ message, explained }) => {
    expect(killedReplicaFailure(message, KILLED)).toBe(explained);
  });
});
