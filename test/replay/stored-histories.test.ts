// Every stored history (test/replay/histories, current and archived, of every workflow): a current
// one is a path a replay list names (historyPaths: a file no list names fails here) of that list's
// workflow, an archived one (a previous release's) is of a workflow the suite replays, and none
// holds a secret. The capture script refused the exact secrets each path handled; this
// re-checks what a file can show on its own.
import { describe, expect, it } from 'vitest';
import { onboardEmbeddedSessionWorkflowType } from '../../workflows/onboard-embedded-session.contract.ts';
import {
  findSecretLeaks,
  historyNames,
  historyPaths,
  listStoredHistories,
  onboardingUserName,
  readableHistory,
  readStoredHistory,
  storedHistoriesOf,
  workflowTypeOf,
  workflowTypes,
} from '../support/replay-histories.ts';

const stored = listStoredHistories();

/** Today's captures, one per named path; the rest are archived releases' (archive/RELEASE/…). */
const current = stored.filter((file) => !file.startsWith('archive/'));
const archived = stored.filter((file) => file.startsWith('archive/'));

describe('stored histories', () => {
  it('every current history is a path some replay list names, and every named path has a current history', () => {
    expect(current.filter((file) => !(historyNames as readonly string[]).includes(file))).toEqual([]);
    expect(historyNames.filter((name) => !current.includes(name))).toEqual([]);
  });

  it.each(current)('%s is of the workflow its list names', async (name) => {
    const type = workflowTypes.find((each) => (historyPaths[each] as readonly string[]).includes(name));
    expect(workflowTypeOf(await readStoredHistory(name))).toBe(type);
  });

  // An archived release's histories keep the names of that release's paths, and are replayed
  // by their workflow's replay test with today's.
  it.each(archived)('%s is of a workflow the replay suite covers', async (name) => {
    expect(workflowTypes).toContain(workflowTypeOf(await readStoredHistory(name)));
  });
});

describe('stored histories hold no secret', () => {
  it('the scan finds a code and a token planted in a payload', async () => {
    const history = (await readStoredHistory('code-approved')) as { events: Array<Record<string, unknown>> };
    const planted = { recipient: { type: 'CODE', value: '1234567' }, token: 'eyJhbGciOiJSUzI1NiJ9.e30.c2ln' };
    const payload = {
      metadata: { encoding: Buffer.from('json/plain').toString('base64') },
      data: Buffer.from(JSON.stringify(planted)).toString('base64'),
    };
    history.events.push({
      eventId: '999',
      eventType: 'EVENT_TYPE_MARKER_RECORDED',
      markerRecordedEventAttributes: { details: { data: { payloads: [payload] } } },
    });
    expect(JSON.stringify(history)).not.toContain('1234567');
    const leaks = findSecretLeaks(history, [{ name: 'the planted code', value: '1234567' }]);
    expect(leaks).toEqual(
      expect.arrayContaining([
        'the planted code',
        expect.stringMatching(/^a 7-digit number/),
        expect.stringMatching(/^a JWT/),
      ]),
    );
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

  // The onboarding paths' users all bear this name; the profile the workflow reads holds it, the
  // session row keeps the first name, and the history must not. (The session id and the tokens
  // differ per capture: the capture script checked those.)
  it.each(storedHistoriesOf(onboardEmbeddedSessionWorkflowType))('%s holds not the user’s name', async (name) => {
    const history = await readStoredHistory(name);
    const secrets = Object.entries(onboardingUserName).map(([field, value]) => ({ name: field, value }));
    expect(findSecretLeaks(history, secrets)).toEqual([]);
  });
});
