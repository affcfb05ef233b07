// The burst (docs/benchmarks.md, back-pressure): a partner's payout script sends 1000 fundings at
// once, 1.00 each from the treasury to 100 recipients (a cash-in code each, 10 fundings per
// recipient). Every answer of the first wave is counted by status; the ones refused for load (503
// or 429 with Retry-After) are sent again with the same Idempotency-Key after their Retry-After, as
// a client would, until all are accepted. Reports the first wave's answers and latency, and the
// accepted rate over the whole.
import { randomUUID } from 'node:crypto';
import type { Database } from '../lib/database.ts';
import { finalFundingStatuses } from '../domain/funding.ts';
import type { SandboxAdminClient } from '../sandbox/admin-client.ts';
import { benchAmount, percentiles, round1, type Percentiles } from './bench-load.ts';

export interface BurstRun {
  requests: number;
  recipients: number;
  /** The first wave's answers by status (and code when not 202). */
  firstWave: Record<string, number>;
  /** Answers ≥ 500 that were not a load refusal with Retry-After: must be 0. */
  serverErrors: number;
  /** First-wave latency, ms. */
  latencyMs: Percentiles;
  /** Rounds of retries it took until every request was accepted (0: all at once). */
  retryRounds: number;
  /** Every request accepted (202) at the end. */
  accepted: number;
  /** accepted / seconds from the first request to the last acceptance. */
  acceptedPerSecond: number;
  seconds: number;
}

interface Answer {
  status: number;
  code: string | undefined;
  retryAfterSeconds: number | null;
  ms: number;
}

export async function runBurst(options: {
  apiBase: string;
  opsKey: string;
  admin: SandboxAdminClient;
  requests?: number;
  recipients?: number;
}): Promise<BurstRun> {
  const requests = options.requests ?? 1000;
  const recipientCount = options.recipients ?? 100;
  const codes: string[] = [];
  for (let index = 0; index < recipientCount; index += 1) {
    const user = await options.admin.createUser({
      mobile: `+63940${String(index).padStart(5, '0')}`,
      kycLevel: 'KYC1',
      balance: '0.00',
      walletLimit: '900000000.00',
    });
    codes.push((await options.admin.cashInCode(user.userId)).code);
  }
  const items = Array.from({ length: requests }, (_, index) => ({
    key: `burst-${randomUUID()}`,
    code: codes[index % recipientCount]!,
  }));
  const send = async (item: { key: string; code: string }): Promise<Answer> => {
    const started = performance.now();
    try {
      const response = await fetch(`${options.apiBase}/ops/fundings`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': item.key,
          authorization: `Bearer ${options.opsKey}`,
        },
        body: JSON.stringify({ recipient: { type: 'CODE', code: item.code }, amount: benchAmount }),
      });
      const text = await response.text();
      let code: string | undefined;
      try {
        code = (JSON.parse(text) as { code?: string }).code;
      } catch {
        code = undefined;
      }
      const retryAfter = response.headers.get('retry-after');
      return {
        status: response.status,
        code,
        retryAfterSeconds: retryAfter === null ? null : Number(retryAfter),
        ms: performance.now() - started,
      };
    } catch {
      return { status: 0, code: 'CONNECTION', retryAfterSeconds: null, ms: performance.now() - started };
    }
  };
  const isLoadRefusal = (answer: Answer) =>
    (answer.status === 503 || answer.status === 429) && answer.retryAfterSeconds !== null;

  const started = performance.now();
  const first = await Promise.all(items.map(send));
  const firstWave: Record<string, number> = {};
  for (const answer of first) {
    const key = answer.status === 202 ? '202' : `${answer.status} ${answer.code ?? ''}`.trim();
    firstWave[key] = (firstWave[key] ?? 0) + 1;
  }
  const serverErrors = first.filter((answer) => answer.status >= 500 && !isLoadRefusal(answer)).length;
  let refused = first.flatMap((answer, index) =>
    isLoadRefusal(answer) ? [{ item: items[index]!, retryAfterSeconds: answer.retryAfterSeconds ?? 1 }] : [],
  );
  let accepted = first.filter((answer) => answer.status === 202).length;
  let rounds = 0;
  let lastAcceptance = performance.now();
  while (refused.length > 0 && rounds < 30) {
    rounds += 1;
    // As a client would: after the longest Retry-After of the refusals, every refused one again.
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(...refused.map((entry) => entry.retryAfterSeconds)) * 1000),
    );
    const answers = await Promise.all(refused.map((entry) => send(entry.item)));
    accepted += answers.filter((answer) => answer.status === 202).length;
    lastAcceptance = performance.now();
    refused = refused.flatMap((entry, index) =>
      isLoadRefusal(answers[index]!)
        ? [{ item: entry.item, retryAfterSeconds: answers[index]!.retryAfterSeconds ?? 1 }]
        : [],
    );
  }
  if (rounds === 0) lastAcceptance = performance.now();
  const seconds = (lastAcceptance - started) / 1000;
  return {
    requests,
    recipients: recipientCount,
    firstWave,
    serverErrors,
    latencyMs: percentiles(first.map((answer) => answer.ms)),
    retryRounds: rounds,
    accepted,
    acceptedPerSecond: round1(accepted / seconds),
    seconds: round1(seconds),
  };
}

/** Waits until no funding of the bench's database is unfinished, for at most `timeoutMs`; how many were left. */
export async function waitForFundingsFinal(database: Database, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  const unfinished = () => database.funding.count({ where: { status: { notIn: [...finalFundingStatuses] } } });
  let left = await unfinished();
  while (left > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    left = await unfinished();
  }
  return left;
}
