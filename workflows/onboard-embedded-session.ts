// onboardEmbeddedSession: the slow part of the session URL, after its answer went out.
//   linkEmbeddedSession: profile with the session's token → EMBEDDED link by profileId → row READY
//   the wallet refused the token → FAILED (REAUTH_REQUIRED); retries exhausted → FAILED
// Input and result: the session row id, the link id and codes; never a token or a session id.
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { EmbeddedSessionActivities } from '../activities/embedded-session.ts';
import { embeddedSessionFailureTypes, type OnboardEmbeddedSessionInput, type OnboardEmbeddedSessionResult } from './onboard-embedded-session.contract.ts';

/** The user is looking at a loading page: a few quick retries (~1 minute), then give up. */
const onboarding = proxyActivities<EmbeddedSessionActivities>({
  startToCloseTimeout: '20 seconds',
  retry: {
    initialInterval: '500 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 6,
    nonRetryableErrorTypes: [embeddedSessionFailureTypes.notFound, embeddedSessionFailureTypes.corrupt],
  },
});

export async function onboardEmbeddedSession(input: OnboardEmbeddedSessionInput): Promise<OnboardEmbeddedSessionResult> {
  try {
    return await onboarding.linkEmbeddedSession(input.sessionRecordId);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    return onboarding.failEmbeddedSession(input.sessionRecordId, 'ONBOARDING_FAILED');
  }
}
