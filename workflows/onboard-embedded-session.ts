// onboardEmbeddedSession: the slow part of the session URL, after its answer went out.
//   linkEmbeddedSession: profile with the session's token → EMBEDDED link by profileId → row READY
//   the wallet refused the token → FAILED (REAUTH_REQUIRED); retries exhausted → FAILED
// A user already on the landing page is onboarded there on demand (links/embedded-onboarding.ts);
// this workflow then finds the session done. Input and result: the session row id, the link id and
// codes; never a token or a session id.
import {
  ActivityFailure,
  ApplicationFailure,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setWorkflowOptions,
} from '@temporalio/workflow';
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

/** The steps as activities: how onboardings started before `localStepsPatch` run. */
const onboarding = proxyActivities<OnboardEmbeddedSessionActivities>({ startToCloseTimeout: '20 seconds', retry });

/**
 * The same steps as local activities: a profile read and a few short writes, all
 * repeatable, run inside the workflow task. One workflow task and no activity task per session
 * instead of two and one: a storm's backlog drains about twice as fast.
 */
const localOnboarding = proxyLocalActivities<OnboardEmbeddedSessionActivities>({
  startToCloseTimeout: '20 seconds',
  localRetryThreshold: '10 seconds',
  retry,
});

/** The patch that runs the steps as local activities; histories from before it replay the activity path. */
export const localStepsPatch = 'onboard-embedded-session-local-steps';

// Pinned (docs/changing-workflows.md): a run started on a versioned build finishes on it, so a
// change to its commands is a new build. The patched() gates in this file stay for the runs the
// previous release started before Worker Versioning: unversioned, they move to the current build at
// their next workflow task and replay here (test/replay/histories/archive/release-360981c). They go
// once `walletflow deploy status` shows no unversioned run open (docs/changing-workflows.md,
// "Retiring the previous release's gates").
setWorkflowOptions({ versioningBehavior: 'PINNED' }, onboardEmbeddedSession);

export async function onboardEmbeddedSession(
  input: OnboardEmbeddedSessionInput,
): Promise<OnboardEmbeddedSessionResult> {
  const steps = patched(localStepsPatch) ? localOnboarding : onboarding;
  try {
    return await steps.linkEmbeddedSession(input.sessionRecordId);
  } catch (error) {
    // A local activity's own failure can arrive unwrapped (an ApplicationFailure).
    if (!(error instanceof ActivityFailure) && !(error instanceof ApplicationFailure)) throw error;
    return steps.failEmbeddedSession(input.sessionRecordId, 'ONBOARDING_FAILED');
  }
}
