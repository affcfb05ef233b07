// A build of workflows that has no fundWallet (test/integration/workflow-unavailable.test.ts): a
// worker of this bundle fails every task of a fundWallet run ("workflow type not found"), as a
// deployed build that cannot run a run's history does. The run stays open, its workflow task
// failing, so Temporal refuses its updates (FAILED_PRECONDITION) until a build that runs it polls.

/** The bundle's only workflow: a build needs one; nothing starts it. */
export async function notFundWallet(): Promise<void> {}
