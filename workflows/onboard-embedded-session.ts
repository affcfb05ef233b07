// onboardEmbeddedSession: the slow part of the session URL, after its answer went out.
//   linkEmbeddedSession: profile with the session's token → EMBEDDED link by profileId → row READY
//   the wallet refused the token → FAILED (REAUTH_REQUIRED); retries exhausted → FAILED
// A user already on the landing page is onboarded there on demand (links/embedded-onboarding.ts);
// this workflow then finds the session done. Input and result: the session row id, the link id and
// codes; never a token or a session id.
import { ActivityFailure, ApplicationFailure, proxyLocalActivities, setWorkflowOptions } from '@temporalio/workflow';
import {
  embeddedSessionFailureTypes,
  type OnboardEmbeddedSessionActivities,
  type OnboardEmbeddedSessionInput,
  type OnboardEmbeddedSessionResult,
} from './onboard-embedded-session.contract.ts';

/** The user is looking at a loading page: a few quick retries (~1 minute), then give up. */
const retry = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
  maximumAttempts: 6,
  nonRetryableErrorTypes: [embeddedSessionFailureTypes.notFound, embeddedSessionFailureTypes.corrupt],
};

/**
 * The steps, as local activities: a profile read and a few short writes, all repeatable, run
 * inside the workflow task. One workflow task and no activity task per session: a storm's backlog
 * drains about twice as fast as with activity tasks.
 */
const steps = proxyLocalActivities<OnboardEmbeddedSessionActivities>({ startToCloseTimeout: '20 seconds', localRetryThreshold: '10 seconds', retry });

// Pinned (docs/changing-workflows.md): a run finishes on the build it started on; a change to its
// commands is a new build, never a patch.
setWorkflowOptions({ versioningBehavior: 'PINNED' }, onboardEmbeddedSession);

export async function onboardEmbeddedSession(input: OnboardEmbeddedSessionInput): Promise<OnboardEmbeddedSessionResult> {
  try {
    return await steps.linkEmbeddedSession(input.sessionRecordId);
  } catch (error) {
    // A local activity's own failure can arrive unwrapped (an ApplicationFailure).
    if (!(error instanceof ActivityFailure) && !(error instanceof ApplicationFailure)) throw error;
    return steps.failEmbeddedSession(input.sessionRecordId, 'ONBOARDING_FAILED');
  }
}
