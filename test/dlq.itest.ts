// `switchyard dlq` against a real NATS with the project's users: a real handler runtime (the
// config-status concern's consumers, as its user, with a handler the test breaks and fixes)
// dead-letters a poisoned key and an invalid payload; the CLI, run as a process as the `dlq`
// user, lists and shows them with their reasons, refuses what it must not re-drive, and
// re-drives the poisoned key once the handler is fixed: processed exactly once, DLQ empty.
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Bus, connectBus } from '../src/bus/connect.ts';
import { redriveMsgId } from '../src/bus/dead-letters.ts';
import { workItemSchema } from '../src/bus/messages.ts';
import {
  deadLetterHeaders,
  done,
  type HandlerRuntime,
  PermanentError,
  startHandlerRuntime,
} from '../src/bus/runtime/index.ts';
import { workSubject } from '../src/bus/subjects.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { CONFIG_STATUS_WORK } from '../src/handlers/config-status/wakes.ts';
import { CONFIG_STATUS } from '../src/handlers/config-status.ts';
import { natsCredentialFlags } from '../src/local-cluster/nats-credentials.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { runSwitchyard } from './support/processes.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'error', name: 'dlq-itest' });
const PARTITIONS = defaultConfig().bus.partitions.configStatus;

let own: OwnBus;
let bus: Bus;
let runtime: HandlerRuntime;
/** The handler fails these keys permanently while broken. */
let broken = true;
const processed = new Map<string, number>();
const attempts = new Map<string, number>();

beforeAll(async () => {
  own = await startOwnBus();
  bus = await connectBus({
    servers: own.server.url,
    credentials: { user: CONFIG_STATUS, passwordFile: join(own.natsCredentialsDir, CONFIG_STATUS) },
    name: CONFIG_STATUS,
    log,
    mode: 'verify',
  });
  runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: CONFIG_STATUS,
    consumers: CONFIG_STATUS_WORK.consumers(PARTITIONS),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${CONFIG_STATUS}`,
    log,
    pullExpiresMs: 2_000,
    handle: async (item) => {
      attempts.set(item.key, (attempts.get(item.key) ?? 0) + 1);
      if (broken && item.key.startsWith('poison'))
        throw new PermanentError(`cannot reconcile ${item.key}: the handler is still broken`);
      processed.set(item.key, (processed.get(item.key) ?? 0) + 1);
      return done;
    },
  });
});

afterAll(async () => {
  await runtime?.stop();
  await bus?.close();
  // Fails when the server refused any of the users a subject (the handler's or dlq's).
  await own?.stop();
});

/** `switchyard dlq <args>` as a process, connected as the `dlq` user. */
function dlq(...args: string[]) {
  return runSwitchyard([
    'dlq',
    ...args,
    `--nats.url=${own.server.url}`,
    ...natsCredentialFlags(own.natsCredentialsDir, 'dlq'),
  ]);
}

async function publishWork(key: string, payload: unknown = { key, seq: 0 }): Promise<string> {
  const subject = workSubject(CONFIG_STATUS, key, PARTITIONS);
  await own.js.publish(subject, JSON.stringify(payload));
  return subject;
}

async function dlqCount(): Promise<number> {
  return (await own.jsm.streams.info(STREAMS.deadLetters)).state.messages;
}

async function waitForDlq(n: number): Promise<void> {
  await waitFor(`${n} dead letters`, async () => ((await dlqCount()) === n ? true : undefined), {
    timeoutMs: 20_000,
  });
}

interface ListedEntry {
  seq: number;
  concern: string;
  kind: string;
  reason: string;
  originalSubject: string;
}

async function listed(): Promise<ListedEntry[]> {
  const out = await dlq('list', '-o', 'json');
  expect(out.code, out.stderr).toBe(0);
  return JSON.parse(out.stdout) as ListedEntry[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('switchyard dlq', () => {
  let poisonSeq = 0;
  let invalidSeq = 0;
  let poisonSubject = '';

  it('lists and shows a permanently failed key and an invalid payload with their reasons', async () => {
    await publishWork('fine');
    poisonSubject = await publishWork('poison');
    const invalidSubject = await publishWork('bad', { key: 5 });
    await waitForDlq(2);
    await waitFor('the good key processed', () => (processed.get('fine') === 1 ? true : undefined));

    const entries = await listed();
    expect(entries).toHaveLength(2);
    const poison = entries.find((e) => e.kind === 'permanent');
    const invalid = entries.find((e) => e.kind === 'invalid');
    expect(poison).toMatchObject({ concern: CONFIG_STATUS, originalSubject: poisonSubject });
    expect(poison?.reason).toMatch(/the handler is still broken/);
    expect(invalid).toMatchObject({ concern: CONFIG_STATUS, originalSubject: invalidSubject });
    expect(invalid?.reason).toMatch(/schema validation failed/);
    poisonSeq = poison?.seq ?? 0;
    invalidSeq = invalid?.seq ?? 0;

    const human = await dlq('list');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(
      new RegExp(`^${poisonSeq} +config-status +permanent +1 .*still broken`, 'm'),
    );
    expect(human.stdout).toMatch(new RegExp(`^${invalidSeq} +config-status +invalid +1 `, 'm'));
    expect(human.stdout).toContain('2 dead letters (1 invalid, 1 permanent)');
    const none = await dlq('list', '--concern=assign');
    expect(none).toMatchObject({ code: 0, stdout: 'no dead letters of assign\n' });

    const shown = await dlq('show', String(poisonSeq));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      /reason +PermanentError: cannot reconcile poison: the handler is still broken/,
    );
    expect(shown.stdout).toMatch(/decodes now +yes, against config-status's schema/);
    expect(shown.stdout).toContain(`to ${poisonSubject}: \`switchyard dlq retry ${poisonSeq}\``);
    expect(shown.stdout).toContain('Switchyard-Original-Stream: WORK');
    expect(shown.stdout).toContain('    "key": "poison",');
    const shownInvalid = await dlq('show', String(invalidSeq), '-o', 'json');
    expect(shownInvalid.code, shownInvalid.stderr).toBe(0);
    const json = JSON.parse(shownInvalid.stdout) as {
      payload: unknown;
      decodesNow: { ok: boolean };
      redrive: { ok: boolean; reason: string };
      keptUntil: string;
    };
    expect(json.payload).toEqual({ key: 5 });
    expect(json.decodesNow.ok).toBe(false);
    expect(json.redrive).toMatchObject({ ok: false, reason: expect.stringMatching(/does not decode/) });
    expect(Date.parse(json.keptUntil) - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);

    const missing = await dlq('show', '9999');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no dead letter 9999/);
    const usage = await dlq('show');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/usage: switchyard dlq/);
  });

  it('re-drives the poisoned key once the handler is fixed: processed exactly once, and a second retry does nothing', async () => {
    const before = attempts.get('poison');
    broken = false;
    const refused = await dlq('retry', String(invalidSeq));
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(new RegExp(`refused ${invalidSeq}: its payload does not decode`));

    const retried = await dlq('retry', String(poisonSeq));
    expect(retried.code, `${retried.stdout}${retried.stderr}`).toBe(0);
    expect(retried.stdout).toContain(`re-drove ${poisonSeq} → ${poisonSubject}`);
    await waitFor('the re-driven key processed', () => (processed.get('poison') === 1 ? true : undefined));
    expect(attempts.get('poison')).toBe((before ?? 0) + 1);

    const again = await dlq('retry', String(poisonSeq));
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(new RegExp(`no dead letter ${poisonSeq}`));
    await sleep(1_500);
    expect(processed.get('poison')).toBe(1);

    // Only the refused one is left; with it gone, the DLQ is empty.
    expect((await listed()).map((e) => e.seq)).toEqual([invalidSeq]);
    await own.jsm.streams.deleteMessage(STREAMS.deadLetters, invalidSeq);
    expect(await dlqCount()).toBe(0);
  });

  it('refuses a dead letter whose original subject is not a work subject a handler consumes, and keeps it', async () => {
    const forged = async (subject: string, originalSubject: string, originalStream: string) => {
      const ack = await own.js.publish(subject, JSON.stringify({ key: 'x', seq: 0 }), {
        headers: deadLetterHeaders({
          kind: 'permanent',
          reason: 'forged by the test',
          originalSubject,
          originalStream,
          originalSeq: 1,
          consumer: 'c',
          deliveryCount: 1,
          at: new Date().toISOString(),
        }),
      });
      return ack.seq;
    };
    const record = await forged('dlq.router', 'k8s.crd._.widgets_2eexample_2ecom', STREAMS.records);
    const nowhere = await forged(`dlq.${CONFIG_STATUS}`, 'work.nosuch.0.x', STREAMS.work);
    const workBefore = (await own.jsm.streams.info(STREAMS.work)).state.last_seq;

    const a = await dlq('retry', String(record));
    expect(a.code).toBe(1);
    expect(a.stdout).toMatch(/refused \d+: it came from K8S .*only work subjects are re-driven/);
    const b = await dlq('retry', String(nowhere));
    expect(b.code).toBe(1);
    expect(b.stdout).toMatch(/refused \d+: no handler consumes work\.nosuch\.0\.x/);
    const all = await dlq('retry', '--all');
    expect(all.code).toBe(1);
    expect(all.stdout).toContain('0 re-driven, 2 refused');

    expect(await dlqCount()).toBe(2);
    expect((await own.jsm.streams.info(STREAMS.work)).state.last_seq).toBe(workBefore);
    await own.jsm.streams.deleteMessage(STREAMS.deadLetters, record);
    await own.jsm.streams.deleteMessage(STREAMS.deadLetters, nowhere);
  });

  it('a retry cut short between its publish and its delete, run again, stores the work once', async () => {
    broken = true;
    const subject = await publishWork('poison-2');
    await waitForDlq(1);
    const [entry] = await listed();
    if (!entry) throw new Error('no dead letter');
    broken = false;
    // The first run published and died before deleting the dead letter.
    const payload = await own.jsm.streams.getMessage(STREAMS.deadLetters, { seq: entry.seq });
    await own.js.publish(subject, payload?.data ?? new Uint8Array(), { msgID: redriveMsgId(entry.seq) });
    await waitFor('the first run’s copy processed', () =>
      processed.get('poison-2') === 1 ? true : undefined,
    );

    const rerun = await dlq('retry', String(entry.seq));
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/already stored by an earlier run: not stored again/);
    await sleep(1_500);
    expect(processed.get('poison-2')).toBe(1);
    expect(await dlqCount()).toBe(0);
  });

  it('retry --all re-drives many with progress lines; a dry run changes nothing; nothing left exits 1', async () => {
    broken = true;
    const keys = Array.from({ length: 30 }, (_, i) => `poison-many-${i}`);
    for (const key of keys) await publishWork(key);
    await waitForDlq(30);
    broken = false;

    const dry = await dlq('retry', '--all', `--concern=${CONFIG_STATUS}`, '--dry-run', '-o', 'json');
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, wouldRedrive: 30, redriven: 0, refused: 0 });
    expect(await dlqCount()).toBe(30);
    expect(keys.some((k) => processed.has(k))).toBe(false);

    const all = await dlq('retry', '--all', `--concern=${CONFIG_STATUS}`);
    expect(all.code, all.stderr).toBe(0);
    expect(all.stderr).toContain('… 10/30 (33%): 10 re-driven, 0 refused, 0 failed, 0 gone');
    expect(all.stderr).toContain('… 30/30 (100%): 30 re-driven');
    expect(all.stdout).toBe('30 re-driven\n');
    await waitFor('every re-driven key processed', () =>
      keys.every((k) => processed.get(k) === 1) ? true : undefined,
    );
    expect(await dlqCount()).toBe(0);

    const nothing = await dlq('retry', '--all');
    expect(nothing.code).toBe(1);
    expect(nothing.stdout).toMatch(/^nothing to retry/);
    await sleep(1_000);
    expect(keys.every((k) => processed.get(k) === 1)).toBe(true);
    expect(runtime.counters()).toMatchObject({ deadLettered: 33 });
  });
});
