// The apiserver's own count of its conversion webhook calls, from its /metrics: the truth about
// failed conversions. A conversion that fails inside a watch is invisible to the client (the
// apiserver only closes the stream); it is not invisible here.
import type { KubeConfig } from '@kubernetes/client-node';
import { apiUrl, HttpMethod, send } from '../kube/request.ts';

const METRIC = 'apiserver_crd_conversion_webhook_duration_seconds_count{';

export interface Conversions {
  succeeded: number;
  failed: number;
}

/** Conversion webhook calls per CRD name, as counted since the apiserver started. */
export async function apiserverConversions(kc: KubeConfig): Promise<Map<string, Conversions>> {
  const res = await send(kc, HttpMethod.GET, apiUrl(kc, '/metrics'));
  if (res.status !== 200) throw new Error(`reading the apiserver's metrics: HTTP ${res.status}`);
  return conversionsFromMetrics(await res.text());
}

/** Parses the Prometheus text; `succeeded="true|false"` on this apiserver, `result` on others. */
export function conversionsFromMetrics(text: string): Map<string, Conversions> {
  const byCrd = new Map<string, Conversions>();
  for (const line of text.split('\n')) {
    if (!line.startsWith(METRIC)) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    const crd = labels.crd_name ?? '';
    const count = Number(line.slice(line.lastIndexOf(' ') + 1));
    const entry = byCrd.get(crd) ?? { succeeded: 0, failed: 0 };
    if (labels.succeeded === 'true' || labels.result === 'success') entry.succeeded += count;
    else entry.failed += count;
    byCrd.set(crd, entry);
  }
  return byCrd;
}

/** The sum over `crds` (all of them when omitted). */
export function totalOf(byCrd: ReadonlyMap<string, Conversions>, crds?: readonly string[]): Conversions {
  const total = { succeeded: 0, failed: 0 };
  for (const [crd, c] of byCrd) {
    if (crds && !crds.includes(crd)) continue;
    total.succeeded += c.succeeded;
    total.failed += c.failed;
  }
  return total;
}
