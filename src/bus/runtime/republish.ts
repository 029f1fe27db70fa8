/**
 * Republishing a message afresh: when its attempt budget ran out on bus
 * failures only (a NATS restart, a missing stream), the message itself is
 * fine, so it is published again to its own subject with a new budget and the
 * original acked — never dead-lettered for the bus's fault. The copy carries
 * where it first came from, so work derived from it (e.g. the pacer's release
 * message id) keeps one identity across republishes, and the republish itself
 * has a message id, so a replica that dies between publish and ack adds no
 * second copy.
 */
import { type MsgHdrs, headers as natsHeaders } from '@nats-io/transport-node';
import { RECHECK_HEADERS } from './recheck.ts';

export const REPUBLISHED_FROM_HEADER = 'Switchyard-Republished-From';

/** `<stream>:<seq>` of the message's first publication. */
export function originOf(hdrs: MsgHdrs | undefined, stream: string, seq: number): string {
  return hdrs?.get(REPUBLISHED_FROM_HEADER) || `${stream}:${seq}`;
}

export function republishMsgId(stream: string, seq: number): string {
  return `republish:${stream}:${seq}`;
}

/** The application headers plus the origin; the server's `Nats-*` headers (message id, expectations) stay behind. */
export function republishHeaders(hdrs: MsgHdrs | undefined, origin: string): MsgHdrs {
  const out = natsHeaders();
  for (const [k, values] of hdrs ?? []) {
    if (k.toLowerCase().startsWith('nats-')) continue;
    // Starting over starts the count of failed attempts over too.
    if (k.toLowerCase() === RECHECK_HEADERS.failedAttempts.toLowerCase()) continue;
    for (const v of values) out.append(k, v);
  }
  out.set(REPUBLISHED_FROM_HEADER, origin);
  return out;
}
