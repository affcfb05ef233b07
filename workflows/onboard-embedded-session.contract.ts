// onboardEmbeddedSession's contract: what its starters and the workflow itself agree on (type
// name, input and result, workflow id, failure types) and the one start every starter uses.
// Imported by the workflow bundle: runtime imports from @temporalio/* and workflows/ only, and the
// workflow's signature declared here (the workflow file imports this one, never the reverse).
import type { Client } from '@temporalio/client';
import type { OnboardEmbeddedSessionInput, OnboardEmbeddedSessionResult } from '../domain/embedded-session.ts';
import { startOncePolicies } from './idempotent-start.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const onboardEmbeddedSessionWorkflowType = 'onboardEmbeddedSession';

// Declared in domain/: the onboarding activities return the same result.
export type { OnboardEmbeddedSessionInput, OnboardEmbeddedSessionResult };

/** onboardEmbeddedSession's signature: what starters type-check their arguments against. */
export type OnboardEmbeddedSessionWorkflow = (
  input: OnboardEmbeddedSessionInput,
) => Promise<OnboardEmbeddedSessionResult>;

/** The ApplicationFailure types the onboarding activities throw and the workflow never retries. */
export const embeddedSessionFailureTypes = {
  /** No embedded_session row with this id. */
  notFound: 'EmbeddedSessionNotFound',
  /** The row has no tokens to onboard with. */
  corrupt: 'EmbeddedSessionCorrupt',
} as const;

/** The onboarding workflow's id for a session row: one workflow per session. */
export const onboardingWorkflowId = (sessionRecordId: string) => `embedded-session-${sessionRecordId}`;

/**
 * Starts onboarding for a session row, or finds it running. A closed run is not started again, and
 * the refusal reaches the caller (the session URL and the landing page log it).
 */
export async function startOnboardEmbeddedSession(
  client: Client,
  options: { taskQueue: string; sessionRecordId: string },
): Promise<void> {
  const input: OnboardEmbeddedSessionInput = { sessionRecordId: options.sessionRecordId };
  await client.workflow.start<OnboardEmbeddedSessionWorkflow>(onboardEmbeddedSessionWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: onboardingWorkflowId(options.sessionRecordId),
    args: [input],
    ...startOncePolicies,
  });
}

/**
 * The activities onboardEmbeddedSession schedules, as activities or local activities
 * (activities/embedded-session.ts implements them, taking their types from here).
 */
export interface OnboardEmbeddedSessionActivities {
  /** Links the session: profile → link (EMBEDDED, by profileId) with the session's tokens. Repeatable. */
  linkEmbeddedSession(sessionRecordId: string): Promise<OnboardEmbeddedSessionResult>;
  /** Ends onboarding as FAILED with `code` (a session already READY stays READY). */
  failEmbeddedSession(sessionRecordId: string, code: string): Promise<OnboardEmbeddedSessionResult>;
}
