/**
 * Subject names of the bus. Kubernetes names contain `.` (a CRD is
 * `widgets.example.com`), which NATS reads as a token separator, so every
 * name is escaped into one token: letters, digits and `-` stay, every other
 * byte becomes `_` and two hex digits (`.` → `_2e`). The escape is total and
 * reversible, and `_` never appears in a DNS name, so escaped names stay
 * readable in `nats stream view`.
 *
 * Layout (`<kind>` is a view kind of api/resources.ts):
 *   k8s.<kind>.<namespace>.<name>   object snapshots and tombstones (stream K8S)
 *   hb.<kind>.<namespace>.<name>    Lease renewals that change nothing else (stream HEARTBEATS)
 *   work.<concern>.<partition>.<key> handler work items (stream WORK, see bus/runtime)
 *   recheck.<concern>.<partition>.<key> a key's durable re-check: a message schedule
 *                                   that fires onto work.<…> (stream WORK, runtime/recheck.ts)
 *   fanout.<concern>.<key>          items waiting for the pacer (stream FANOUT)
 *   dlq.<concern>                   dead letters with their reason (stream DLQ)
 *   decision.<concern>.<key>        what a handler decided, and on which view (stream DECISIONS)
 * A cluster-scoped object's namespace token is `_`.
 */

import { KINDS } from '../api/resources.ts';
import { partitionedSubject } from './runtime/partition.ts';

const SAFE = /^[A-Za-z0-9-]$/;

export function escapeToken(value: string): string {
  if (value === '') return '_';
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const ch = String.fromCharCode(byte);
    out += SAFE.test(ch) ? ch : `_${byte.toString(16).padStart(2, '0')}`;
  }
  return out;
}

export function unescapeToken(token: string): string {
  if (token === '_') return '';
  // Every view reads a name out of every record's subject: most names need nothing, or only
  // ASCII escapes (`.` in a CRD's name), which need no byte buffer.
  if (!token.includes('_')) return token;
  const ascii = unescapeAscii(token);
  if (ascii !== undefined) return ascii;
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] === '_') {
      const hex = token.slice(i + 1, i + 3);
      if (!/^[0-9a-f]{2}$/.test(hex)) throw new Error(`malformed subject token ${token}`);
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(token.charCodeAt(i));
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The token unescaped when every escape is an ASCII byte; undefined when one is not. */
function unescapeAscii(token: string): string | undefined {
  let out = '';
  let from = 0;
  for (let at = token.indexOf('_'); at !== -1; at = token.indexOf('_', from)) {
    const hex = token.slice(at + 1, at + 3);
    if (!/^[0-9a-f]{2}$/.test(hex)) throw new Error(`malformed subject token ${token}`);
    const byte = Number.parseInt(hex, 16);
    if (byte >= 0x80) return undefined;
    out += token.slice(from, at) + String.fromCharCode(byte);
    from = at + 3;
  }
  return out + token.slice(from);
}

/**
 * The work subject of one key of a partitioned concern: `work.<concern>.<partition>.<key>`, the
 * key escaped into one token and hashed into its partition as the runtime expects.
 */
export function workSubject(concern: string, key: string, partitions: number): string {
  return partitionedSubject(`work.${concern}`, [escapeToken(key)], partitions);
}

/** The schedule subject of a work subject's re-check: one per key, so a newer schedule replaces the older. */
export function recheckSubject(workSubject: string): string {
  if (!workSubject.startsWith('work.')) {
    throw new Error(
      `only work.> triggers can be re-checked (a schedule targets its own stream), got ${workSubject}`,
    );
  }
  return `recheck.${workSubject.slice('work.'.length)}`;
}

export interface ObjectKey {
  kind: string;
  namespace: string;
  name: string;
}

export function objectSubject({ kind, namespace, name }: ObjectKey): string {
  return `k8s.${kind}.${escapeToken(namespace)}.${escapeToken(name)}`;
}

/**
 * The kinds recorded on HEARTBEATS: only a Lease is renewed without changing anything else
 * (watchers/resources.ts gives only it a content digest). A view of other kinds never follows it.
 */
export const RENEWED_KINDS: readonly string[] = [KINDS.lease.viewKind];

export function heartbeatSubject({ kind, namespace, name }: ObjectKey): string {
  return `hb.${kind}.${escapeToken(namespace)}.${escapeToken(name)}`;
}

/** The key of an object or heartbeat subject; undefined for any other subject. */
export function parseObjectSubject(subject: string): ObjectKey | undefined {
  const parts = subject.split('.');
  if (parts.length !== 4 || (parts[0] !== 'k8s' && parts[0] !== 'hb')) return undefined;
  const [, kind = '', ns = '', name = ''] = parts;
  try {
    return { kind, namespace: unescapeToken(ns), name: unescapeToken(name) };
  } catch {
    return undefined;
  }
}

/**
 * The kind token of an object or heartbeat subject, read without splitting or unescaping the
 * rest: a view reads every kind of K8S_LATEST and skips most records by this alone.
 */
export function objectSubjectKind(subject: string): string | undefined {
  const first = subject.indexOf('.');
  const second = first === -1 ? -1 : subject.indexOf('.', first + 1);
  return second === -1 ? undefined : subject.slice(first + 1, second);
}

export function kindFilter(prefix: 'k8s' | 'hb', kind: string): string {
  return `${prefix}.${kind}.>`;
}

/** Where a handler records what it decided about a key: `decision.<concern>.<key>`. */
export function decisionSubject(concern: string, key: string): string {
  return `decision.${concern}.${escapeToken(key)}`;
}

/** NATS subject matching: `*` is one token, `>` the rest (one or more tokens). */
export function subjectMatches(pattern: string, subject: string): boolean {
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length || (p[i] !== '*' && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}
