// The sequence of moves the chaos cases take turns with: one target between two instances, by
// every way a user moves one: pinned, unpinned, an instance joining or leaving the sharding pool,
// a weight changed. A (the default) is in the pool for the whole run, so each step moves the
// target to the other instance and six steps bring everything back to where it started.
import type { KubeConfig } from '@kubernetes/client-node';
import { poolMember, rendezvousWinner } from '../../../src/core/assignment.ts';
import { patchConfig, patchInstance } from '../../../src/scenario/fleet.ts';

export type MoveKind = 'pin' | 'unpin' | 'sharding' | 'weight';

export interface Move {
  kind: MoveKind;
  /** What the write does, in a user's words. */
  what: string;
  from: string;
  to: string;
  /** The write that changes the assignment: the move starts when it returns. */
  change(): Promise<void>;
}

/** B's weights in the pool beside A (weight 1): one that wins `target`, one that loses it. */
export function poolWeights(target: string, a: string, b: string): { win: number; lose: number } | undefined {
  const winner = (weight: number) =>
    rendezvousWinner([poolMember(a, 1), poolMember(b, weight)], target)?.name;
  if (winner(1) !== a) return undefined;
  for (let weight = 2; weight <= 1000; weight++) if (winner(weight) === b) return { win: weight, lose: 1 };
  return undefined;
}

export class MoveCycle {
  private step = 0;
  private readonly kc: KubeConfig;
  private readonly config: string;
  private readonly a: string;
  private readonly b: string;
  private readonly weights: { win: number; lose: number };
  private readonly poolOnly: boolean;

  /**
   * The target starts on `a`, which is the default and in the pool with weight 1; `b` is outside
   * it. `poolOnly`: only the moves of the pool (b joins, its weight down and up, b leaves), each a
   * rebalance of every target the pool serves; four steps bring everything back.
   */
  constructor(opts: {
    kc: KubeConfig;
    config: string;
    a: string;
    b: string;
    weights: { win: number; lose: number };
    poolOnly?: boolean;
  }) {
    this.kc = opts.kc;
    this.config = opts.config;
    this.a = opts.a;
    this.b = opts.b;
    this.weights = opts.weights;
    this.poolOnly = opts.poolOnly ?? false;
  }

  /** Where the target must be served now, every move so far done. */
  get current(): string {
    return this.step % 2 === 0 ? this.a : this.b;
  }

  next(): Move {
    const { a, b, kc, config, weights } = this;
    const steps: Move[] = [
      {
        kind: 'pin',
        what: `config pinned to ${b}`,
        from: a,
        to: b,
        change: () => patchConfig(kc, config, { webhookServerRef: { name: b } }),
      },
      {
        kind: 'unpin',
        what: 'config unpinned (the pool, A alone, serves it)',
        from: b,
        to: a,
        change: () => patchConfig(kc, config, { webhookServerRef: null }),
      },
      {
        kind: 'sharding',
        what: `${b} joins the pool with weight ${weights.win}`,
        from: a,
        to: b,
        change: () => patchSharding(kc, b, { enabled: true, weight: weights.win }),
      },
      {
        kind: 'weight',
        what: `${b}'s weight down to ${weights.lose}`,
        from: b,
        to: a,
        change: () => patchSharding(kc, b, { enabled: true, weight: weights.lose }),
      },
      {
        kind: 'weight',
        what: `${b}'s weight up to ${weights.win}`,
        from: a,
        to: b,
        change: () => patchSharding(kc, b, { enabled: true, weight: weights.win }),
      },
      {
        kind: 'sharding',
        what: `${b} leaves the pool`,
        from: b,
        to: a,
        change: () => patchSharding(kc, b, { enabled: false, weight: weights.lose }),
      },
    ];
    const sequence = this.poolOnly
      ? steps.filter((s) => s.kind === 'sharding' || s.kind === 'weight')
      : steps;
    const move = sequence[this.step % sequence.length] as Move;
    this.step++;
    return move;
  }
}

async function patchSharding(
  kc: KubeConfig,
  instance: string,
  sharding: { enabled: boolean; weight: number },
) {
  const res = await patchInstance(kc, instance, { sharding });
  if (res.status !== 200)
    throw new Error(`patching ${instance}'s sharding: HTTP ${res.status} ${res.message}`);
}
