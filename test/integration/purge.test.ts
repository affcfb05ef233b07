// The purge (the walletflow-purge schedule): login states, login grants, web sessions and embedded
// sessions are deleted by the purgeExpired workflow once their expiry lies past the retention
// margin, in bounded batches, and the worker's Schedule runs it. Rows of other tests in the shared
// database expired minutes or hours ago; the margin used here is a week, so only this file's rows
// are old enough.
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PurgeReport } from '../../workflows/purge-expired.contract.ts';
import { hashBearer } from '../../links/embedded-sessions.ts';
import { createConsoleSessions } from '../../access/console-sessions.ts';
import { ensurePurgeSchedule } from '../../worker/purge-schedule.ts';
import {
  manualPurgeWorkflowId,
  purgeExpiredWorkflowType,
  purgeScheduleId,
  startPurgeExpired,
} from '../../workflows/purge-expired.contract.ts';
import { startPartnerStack, type PartnerStack } from '../support/partner-stack.ts';
import { nodeArgsFor } from '../support/node-entry.ts';
import {
  resolveTemporalCli,
  startTemporalDevServerOnFreePort,
  type RunningTemporal,
} from '../../stack/temporal-dev-server.ts';

let stack: PartnerStack;
const DAY_MS = 86_400_000;
const WEEK_SECONDS = 7 * 86_400;
const daysFromNow = (days: number) => new Date(Date.now() + days * DAY_MS);

beforeAll(async () => {
  stack = await startPartnerStack();
  await stack.startWorker();
});
afterAll(async () => {
  await stack.close();
});

const hash = () => hashBearer(randomBytes(16).toString('hex'));

async function loginState(expiresAt: Date) {
  const stateHash = hash();
  await stack.database.loginState.create({ data: { stateHash, partnerUserId: 'purge-test', expiresAt } });
  return stateHash;
}
async function loginGrant(expiresAt: Date, used: boolean) {
  const tokenHash = hash();
  await stack.database.loginGrant.create({
    data: { tokenHash, partnerUserId: 'purge-test', source: 'OPS', expiresAt, ...(used ? { usedAt: expiresAt } : {}) },
  });
  return tokenHash;
}
async function embeddedSession(expiresAt: Date, consumed: boolean) {
  const id = randomUUID();
  await stack.database.embeddedSession.create({
    data: {
      id,
      sessionIdHash: hash(),
      requestReferenceNo: `purge-${id.slice(0, 8)}`,
      accessTokenExpiresAt: expiresAt,
      expiresAt,
      ...(consumed ? { consumedAt: expiresAt, status: 'READY' as const } : {}),
    },
  });
  return id;
}
async function webSession(embeddedSessionId: string, expiresAt: Date) {
  const id = randomUUID();
  await stack.database.appSession.create({
    data: { id, cookieHash: hash(), embeddedSessionId, csrfToken: 'x'.repeat(43), expiresAt },
  });
  return id;
}

async function purge(input: {
  retentionSeconds: number;
  batchSize?: number;
  maxBatches?: number;
}): Promise<PurgeReport> {
  const workflowId = manualPurgeWorkflowId(randomUUID());
  const handle = await startPurgeExpired(stack.temporal, { taskQueue: stack.taskQueue, workflowId, input });
  return handle.result();
}

describe('purge of expired logins and sessions', () => {
  it('deletes login states, login grants, used or expired embedded sessions and web sessions past the retention margin, and keeps the rest', async () => {
    const old = daysFromNow(-10);
    const recent = daysFromNow(-1);
    const live = daysFromNow(1);
    const gone = {
      states: [await loginState(old), await loginState(old)],
      grants: [await loginGrant(old, true), await loginGrant(old, false)],
      // a used session whose web session expired too, and an expired one never used
      sessions: [await embeddedSession(old, true), await embeddedSession(old, false)],
    };
    const goneWeb = await webSession(gone.sessions[0]!, old);
    const kept = {
      states: [await loginState(recent), await loginState(live)],
      grants: [await loginGrant(recent, true), await loginGrant(live, false)],
      sessions: [await embeddedSession(recent, true), await embeddedSession(live, false)],
    };
    // An old session id whose web session still lives: both stay until the web session is purged.
    const heldSession = await embeddedSession(old, true);
    const liveWeb = await webSession(heldSession, live);

    const report = await purge({ retentionSeconds: WEEK_SECONDS });

    const allStates = [...gone.states, ...kept.states];
    const allGrants = [...gone.grants, ...kept.grants];
    const allSessions = [...gone.sessions, ...kept.sessions, heldSession];
    expect(
      (await stack.database.loginState.findMany({ where: { stateHash: { in: allStates } } }))
        .map((row) => row.stateHash)
        .sort(),
    ).toEqual([...kept.states].sort());
    expect(
      (await stack.database.loginGrant.findMany({ where: { tokenHash: { in: allGrants } } }))
        .map((row) => row.tokenHash)
        .sort(),
    ).toEqual([...kept.grants].sort());
    expect(
      (await stack.database.embeddedSession.findMany({ where: { id: { in: allSessions } } }))
        .map((row) => row.id)
        .sort(),
    ).toEqual([...kept.sessions, heldSession].sort());
    expect(
      (await stack.database.appSession.findMany({ where: { id: { in: [goneWeb, liveWeb] } } })).map((row) => row.id),
    ).toEqual([liveWeb]);
    expect(report.deleted.login_state).toBeGreaterThanOrEqual(2);
    expect(report.deleted.login_grant).toBeGreaterThanOrEqual(2);
    expect(report.deleted.embedded_session).toBeGreaterThanOrEqual(2);
    expect(report.deleted.app_session).toBeGreaterThanOrEqual(1);
    expect(new Date(report.cutoff).getTime()).toBeLessThan(Date.now() - WEEK_SECONDS * 1000 + 60_000);
    expect(report.unfinished).toEqual([]);
  });

  it('deletes console sign-ins never finished, ended console sessions and spent attempt counts, and keeps the live ones', async () => {
    const signIn = async (expiresAt: Date) => {
      const state = randomBytes(24).toString('base64url');
      await stack.database.consoleSignIn.create({
        data: { state, nonce: 'n'.repeat(43), returnTo: '/console', expiresAt },
      });
      return state;
    };
    const consoleSession = async (times: { expiresAt: Date; lastSeenAt: Date; endsAt: Date }) => {
      const id = randomUUID();
      await stack.database.consoleSession.create({
        data: {
          id,
          cookieHash: hash(),
          personId: 'key:purge-test',
          personName: 'purge-test',
          via: 'key',
          scopes: ['read'],
          csrfToken: 'c'.repeat(43),
          ...times,
        },
      });
      return id;
    };
    const attemptCount = async (expiresAt: Date) => {
      const subject = `198.51.100.${Math.floor(Math.random() * 250)}-${randomUUID().slice(0, 8)}`;
      await stack.database.attemptCount.create({
        data: {
          kind: 'purge-test',
          subject,
          windowStart: new Date(expiresAt.getTime() - 120_000),
          count: 3,
          expiresAt,
        },
      });
      return subject;
    };
    const old = daysFromNow(-10);
    const gone = {
      signIns: [await signIn(old)],
      // Past its lifetime long ago; and idle long ago, its lifetime's end not reached (only its end counts).
      sessions: [
        await consoleSession({ expiresAt: old, lastSeenAt: old, endsAt: old }),
        await consoleSession({ expiresAt: daysFromNow(1), lastSeenAt: old, endsAt: old }),
      ],
      // An attempt count is spent once its window can no longer be read, retention or not: kept for nobody.
      counts: [await attemptCount(new Date(Date.now() - 60_000))],
    };
    const kept = {
      signIns: [await signIn(daysFromNow(-1)), await signIn(new Date(Date.now() + 600_000))],
      sessions: [
        await consoleSession({ expiresAt: daysFromNow(-1), lastSeenAt: daysFromNow(-1), endsAt: daysFromNow(-1) }),
        await consoleSession({
          expiresAt: daysFromNow(1),
          lastSeenAt: new Date(),
          endsAt: new Date(Date.now() + 900_000),
        }),
      ],
      counts: [await attemptCount(new Date(Date.now() + 60_000))],
    };

    const report = await purge({ retentionSeconds: WEEK_SECONDS });

    const signIns = [...gone.signIns, ...kept.signIns];
    const sessions = [...gone.sessions, ...kept.sessions];
    const counts = [...gone.counts, ...kept.counts];
    expect(
      (await stack.database.consoleSignIn.findMany({ where: { state: { in: signIns } } }))
        .map((row) => row.state)
        .sort(),
    ).toEqual([...kept.signIns].sort());
    expect(
      (await stack.database.consoleSession.findMany({ where: { id: { in: sessions } } })).map((row) => row.id).sort(),
    ).toEqual([...kept.sessions].sort());
    expect(
      (await stack.database.attemptCount.findMany({ where: { kind: 'purge-test', subject: { in: counts } } })).map(
        (row) => row.subject,
      ),
    ).toEqual(kept.counts);
    expect(report.deleted.console_sign_in).toBeGreaterThanOrEqual(1);
    expect(report.deleted.console_session).toBeGreaterThanOrEqual(2);
    expect(report.deleted.attempt_count).toBeGreaterThanOrEqual(1);
    expect(report.unfinished).toEqual([]);
  });

  it('deletes a console session idle past the CONSOLE_IDLE_MINUTES it was written under, however long one is set since: it is over', async () => {
    // Signed in under 15 idle minutes (its stored end: 15 minutes after its last act), then CONSOLE_IDLE_MINUTES was
    // raised to a day: the session is over all the same (read() takes it as over), so the purge deletes it once its
    // end is past the retention; one whose end is within the retention is kept.
    const HOUR_MS = 3_600_000;
    const session = async (lastSeenAgoMs: number) => {
      const cookie = randomBytes(32).toString('base64url');
      const lastSeenAt = new Date(Date.now() - lastSeenAgoMs);
      await stack.database.consoleSession.create({
        data: {
          id: randomUUID(),
          cookieHash: hashBearer(cookie),
          personId: 'key:purge-idle-test',
          personName: 'purge-idle-test',
          via: 'key',
          scopes: ['read'],
          csrfToken: 'c'.repeat(43),
          expiresAt: daysFromNow(2),
          lastSeenAt,
          endsAt: new Date(lastSeenAt.getTime() + 15 * 60_000),
        },
      });
      return cookie;
    };
    const endedWithinTheRetention = await session(30 * 60_000);
    const idleUnderItsSetting = await session(2 * HOUR_MS);
    const idleUnderAnyPolicy = await session(30 * HOUR_MS);
    const stored = (cookie: string) =>
      stack.database.consoleSession.count({ where: { cookieHash: hashBearer(cookie) } });
    const sessions = createConsoleSessions(stack.database, { idleMs: 24 * HOUR_MS, lifetimeMs: 48 * HOUR_MS });
    expect(await sessions.read(endedWithinTheRetention)).toBeNull();

    await purge({ retentionSeconds: 3600 });

    expect(await stored(idleUnderAnyPolicy)).toBe(0);
    expect(await stored(idleUnderItsSetting)).toBe(0);
    expect(await stored(endedWithinTheRetention)).toBe(1);
  });

  it('deletes the audit’s budget counts of minutes that are over, and never an audit row, however old', async () => {
    const client = `purge-${randomUUID().slice(0, 8)}`;
    const [clock] = await stack.database.$queryRaw<
      Array<{ minute: Date }>
    >`SELECT date_trunc('minute', now()) AS minute`;
    const minute = clock!.minute;
    const spent = new Date(minute.getTime() - 60_000);
    await stack.database.opsActionBudget.createMany({
      data: [
        { channel: 'api', client, windowStart: spent, recorded: 20 },
        // The minute after this one: still being counted whenever the purge runs.
        { channel: 'api', client, windowStart: new Date(minute.getTime() + 60_000), recorded: 3 },
      ],
    });
    // An audit row and a summary from long ago.
    const ancient = daysFromNow(-4000);
    await stack.database.opsAction.createMany({
      data: [
        {
          at: ancient,
          keyName: null,
          channel: 'api',
          actor: null,
          method: 'POST',
          path: '/ops/fundings',
          status: 401,
          requestId: null,
          client,
        },
        {
          at: ancient,
          keyName: null,
          channel: 'api',
          actor: null,
          method: '*',
          path: '/ops (summary)',
          status: 0,
          requestId: null,
          client,
          count: 12,
          summaryOf: `api ${client} ${ancient.toISOString()}`,
        },
      ],
    });
    const report = await purge({ retentionSeconds: WEEK_SECONDS });
    expect(
      (await stack.database.opsActionBudget.findMany({ where: { client } })).map((row) => row.windowStart.getTime()),
    ).toEqual([minute.getTime() + 60_000]);
    expect(report.deleted.ops_action_budget).toBeGreaterThanOrEqual(1);
    expect(await stack.database.opsAction.count({ where: { client } })).toBe(2);
  });

  it('deletes in bounded batches and says what it left for the next run', async () => {
    const states = await Promise.all(Array.from({ length: 5 }, () => loginState(daysFromNow(-20))));
    const first = await purge({ retentionSeconds: WEEK_SECONDS, batchSize: 2, maxBatches: 2 });
    expect(first.deleted.login_state).toBe(4);
    expect(first.unfinished).toContain('login_state');
    expect(await stack.database.loginState.count({ where: { stateHash: { in: states } } })).toBe(1);
    const second = await purge({ retentionSeconds: WEEK_SECONDS, batchSize: 2, maxBatches: 2 });
    expect(second.unfinished).not.toContain('login_state');
    expect(await stack.database.loginState.count({ where: { stateHash: { in: states } } })).toBe(0);
  });
});

// The schedule's id is the namespace's one purge schedule (a deployment has one): on the suite's shared Temporal,
// any other file's worker process may create it at the same moment with its own task queue and retention. These
// tests run on a Temporal dev server of their own.
describe('the purge schedule', () => {
  let temporal: RunningTemporal;
  let own: PartnerStack;
  beforeAll(async () => {
    temporal = await startTemporalDevServerOnFreePort({ binary: resolveTemporalCli(), namespace: 'default' });
    own = await startPartnerStack({ temporal: { address: temporal.address, namespace: 'default' } });
  });
  afterAll(async () => {
    await own?.close();
    await temporal?.stop();
  });

  it('runs on a Temporal Schedule the worker creates once', async () => {
    const options = { taskQueue: own.taskQueue, everyMinutes: 1440, retentionSeconds: WEEK_SECONDS };
    await own.temporal.schedule
      .getHandle(purgeScheduleId)
      .delete()
      .catch(() => undefined);
    try {
      expect(await ensurePurgeSchedule(own.temporal, options)).toBe('created');
      expect(await ensurePurgeSchedule(own.temporal, options)).toBe('exists');
      const description = await own.temporal.schedule.getHandle(purgeScheduleId).describe();
      expect(description.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: purgeExpiredWorkflowType,
        taskQueue: own.taskQueue,
        args: [{ retentionSeconds: WEEK_SECONDS }],
      });
      expect(description.spec.intervals).toEqual([expect.objectContaining({ every: 1440 * 60_000 })]);
      expect(description.policies.overlap).toBe('SKIP');
    } finally {
      await own.temporal.schedule
        .getHandle(purgeScheduleId)
        .delete()
        .catch(() => undefined);
    }
  });

  it('is created by the worker process at start, from PURGE_EVERY_MINUTES and PURGE_RETENTION_HOURS', async () => {
    await own.temporal.schedule
      .getHandle(purgeScheduleId)
      .delete()
      .catch(() => undefined);
    const worker = spawn(process.execPath, nodeArgsFor('worker/main.ts'), {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: {
        ...own.workerEnv(),
        PURGE_EVERY_MINUTES: '720',
        PURGE_RETENTION_HOURS: '48',
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
        WORKER_METRICS_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const exited = new Promise<number | null>((resolve) => worker.once('exit', (code) => resolve(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          if (output.includes('purge schedule ready')) resolve();
          else if (output.includes('worker polling'))
            reject(new Error(`the worker polls and made no purge schedule:\n${output}`));
        };
        worker.stdout.on('data', onData);
        worker.stderr.on('data', onData);
        void exited.then(() => reject(new Error(`the worker exited:\n${output}`)));
      });
      const description = await own.temporal.schedule.getHandle(purgeScheduleId).describe();
      expect(description.action).toMatchObject({
        workflowType: purgeExpiredWorkflowType,
        taskQueue: own.taskQueue,
        args: [{ retentionSeconds: 48 * 3600 }],
      });
      expect(description.spec.intervals).toEqual([expect.objectContaining({ every: 720 * 60_000 })]);
    } finally {
      worker.kill('SIGTERM');
      await exited;
      await own.temporal.schedule
        .getHandle(purgeScheduleId)
        .delete()
        .catch(() => undefined);
    }
  }, 90_000);
});
