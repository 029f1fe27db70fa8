import { open, stat } from 'node:fs/promises';
import { waitFor } from '../../src/local-cluster/wait.ts';

/** The fields of a kube-apiserver audit event (Metadata level) that tests look at. */
export interface AuditEvent {
  stage: string;
  verb: string;
  requestURI: string;
  userAgent?: string;
  user: { username: string };
  objectRef?: {
    resource?: string;
    namespace?: string;
    name?: string;
    apiGroup?: string;
    subresource?: string;
  };
  responseStatus?: { code?: number };
  requestReceivedTimestamp: string;
  /** When the stage was reached (for ResponseComplete: the response was sent), microseconds. */
  stageTimestamp: string;
}

/**
 * Reads the local apiserver's audit log from the moment it is created on, so a
 * test sees only its own traffic without re-reading the whole shared log.
 */
export async function auditLogFromNow(path: string) {
  let offset = (await stat(path)).size;
  let partial = '';
  const seen: AuditEvent[] = [];

  async function readNew(): Promise<AuditEvent[]> {
    const file = await open(path, 'r');
    try {
      const { size } = await file.stat();
      if (size > offset) {
        const buffer = Buffer.alloc(size - offset);
        await file.read(buffer, 0, buffer.length, offset);
        offset = size;
        const lines = (partial + buffer.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) if (line.trim()) seen.push(JSON.parse(line) as AuditEvent);
      }
    } finally {
      await file.close();
    }
    return seen;
  }

  return {
    /**
     * Polls until `select` over the events so far returns at least `count`
     * (the apiserver writes its audit log asynchronously).
     */
    async waitFor(
      what: string,
      select: (events: AuditEvent[]) => AuditEvent[],
      count = 1,
    ): Promise<AuditEvent[]> {
      return waitFor(
        `audit log: ${what}`,
        async () => {
          const found = select(await readNew());
          return found.length >= count ? found : undefined;
        },
        { timeoutMs: 20_000, intervalMs: 200 },
      );
    },
    async all(): Promise<AuditEvent[]> {
      return readNew();
    },
  };
}
