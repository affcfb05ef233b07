// Replays every stored fundWallet history (test/replay/histories, current and archived) against
// today's workflow bundle: a change that would break running fundings fails here, by path name.
import { fileURLToPath } from 'node:url';
import { DeterminismViolationError } from '@temporalio/workflow';
import { DefaultLogger, Runtime, Worker, type ReplayResult, type ReplayWorkerOptions } from '@temporalio/worker';
import { describe, expect, inject, it } from 'vitest';
import { findSecretLeaks, historyNames, listStoredHistories, readableHistory, readStoredHistory } from '../support/replay-histories.ts';

const stored = listStoredHistories();

// Each replay worker logs its life (and webpack's) at INFO, and Core warns of each expected
// nondeterminism below; errors still show.
try {
  Runtime.install({ logger: new DefaultLogger('WARN'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
} catch {
  // A runtime exists already in this process (another file installed one): keep it.
}

async function replay(options: ReplayWorkerOptions, names: string[]): Promise<ReplayResult[]> {
  const histories = await Promise.all(names.map(async (name) => ({ workflowId: name, history: await readStoredHistory(name) })));
  const results: ReplayResult[] = [];
  for await (const result of Worker.runReplayHistories(options, histories)) results.push(result);
  return results;
}

const fixture = (file: string) => fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url));

describe('fundWallet replay', () => {
  it('has a stored history for every funding path', () => {
    expect(stored).toEqual(expect.arrayContaining([...historyNames]));
  });

  it.each(stored)('%s replays against today’s workflow code', async (name) => {
    const [result, ...more] = await replay({ workflowBundle: { codePath: inject('workflowBundlePath') } }, [name]);
    expect(more).toEqual([]);
    expect(result?.workflowId).toBe(name);
    // The error itself, not just "defined": its message names the mismatching command.
    expect(result?.error).toBeUndefined();
  });

  it('detects a reordered activity call: replay checks something', async () => {
    const results = await replay({ workflowsPath: fixture('reordered-workflows.ts') }, stored);
    expect(results).toHaveLength(stored.length);
    for (const result of results) {
      expect(result.error, result.workflowId).toBeInstanceOf(DeterminismViolationError);
    }
  });

  it('replays every history once the same change sits behind patched()', async () => {
    const results = await replay({ workflowsPath: fixture('patched-workflows.ts') }, stored);
    expect(results.map((result) => [result.workflowId, result.error])).toEqual(stored.map((name) => [name, undefined]));
  });
});

describe('stored histories hold no secret', () => {
  it('the scan finds a code and a token planted in a payload', async () => {
    const history = (await readStoredHistory('code-approved')) as { events: Array<Record<string, unknown>> };
    const planted = { recipient: { type: 'CODE', value: '1234567' }, token: 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln' };
    const payload = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from(JSON.stringify(planted)).toString('base64') };
    history.events.push({ eventId: '999', eventType: 'EVENT_TYPE_MARKER_RECORDED', markerRecordedEventAttributes: { details: { data: { payloads: [payload] } } } });
    expect(JSON.stringify(history)).not.toContain('1234567');
    const leaks = findSecretLeaks(history, [{ name: 'the planted code', value: '1234567' }]);
    expect(leaks).toEqual(expect.arrayContaining(['the planted code', expect.stringMatching(/^a 7-digit number/), expect.stringMatching(/^a JWT/)]));
  });


  it.each(stored)('%s', async (name) => {
    const history = await readStoredHistory(name);
    // Decoded: in the file every JSON payload is base64 and starts with eyJ.
    const readable = readableHistory(history);
    expect(readable).not.toMatch(/"CODE"[^{}]{0,120}?(?<![0-9A-Za-z])\d{7}(?![0-9A-Za-z])/);
    expect(readable).not.toMatch(/eyJ[A-Za-z0-9_-]{8,}/);
    expect(readable).not.toMatch(/transferApiKey|clientSecret/i);
    expect(findSecretLeaks(history)).toEqual([]);
  });
});
