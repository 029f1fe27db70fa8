// Which failed requests a killed webhook-server replica explains. The apiserver sends each
// conversion to one ready endpoint of the instance's Service and never retries a call that failed
// in transit, so a replica killed while the target names its instance fails the calls that reach
// it until its endpoint is withdrawn: no conversion webhook server can prevent that
// (docs/limitations.md). The chaos suite excuses those failures and no other, so it has to tell
// them apart from what the move itself could cause (a replica answering "holds no conversion
// plan", a 4xx, a wrong value), by what the apiserver wrote in the message:
//
//   dialed  the call went to the killed Pod's endpoint and the transport failed there: the
//           message names its address (`dial tcp 127.0.0.1:36627: connect: connection refused`,
//           `read tcp 127.0.0.1:51234->127.0.0.1:36627: read: connection reset by peer`);
//   cut     a connection to the instance's Service closed under a call with no answer, which Go
//           reports without an address (`Post "https://<service>.<namespace>.svc:443/convert/…":
//           EOF`). Only a replica of that instance that died mid-call does that; the chaos case
//           checks that the killed one is the only one that died.
//
// Anything else, from the same Service or not, is not the kill's.

export interface KilledReplica {
  /** The killed Pod's endpoints as its EndpointSlice listed them, `host:port`. */
  addresses: readonly string[];
  /** Its Service as the apiserver's webhook client names it: `<service>.<namespace>.svc`. */
  serviceHost: string;
}

export type KilledReplicaFailure = 'dialed' | 'cut';

/** Transport errors a Go client reports after the address it dialed or read from. */
const AT_ADDRESS =
  '(?:dial tcp |->)ADDR: (?:connect: connection refused|read: connection reset by peer|write: broken pipe|write: connection reset by peer)';
/** A call whose connection closed with no answer: Go names the URL and nothing else. */
const CUT = String.raw`Post \\?"https://HOST(?::\d+)?/[^"\\]*\\?": (?:EOF|unexpected EOF)(?:$|[^\w])`;

/** How the kill explains a failed request's message, or undefined when it does not. */
export function killedReplicaFailure(
  message: string,
  killed: KilledReplica,
): KilledReplicaFailure | undefined {
  if (!message.includes('conversion webhook for')) return undefined;
  for (const address of killed.addresses)
    if (new RegExp(AT_ADDRESS.replace('ADDR', literal(address))).test(message)) return 'dialed';
  if (new RegExp(CUT.replace('HOST', literal(killed.serviceHost))).test(message)) return 'cut';
  return undefined;
}

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
