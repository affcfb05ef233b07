// Build C of the deploy test (test/deploy/worker-deployment.test.ts): today's workflows and their
// commands unchanged, in a bundle of its own (one workflow more), so a build id of its own: the
// build a restarted dev stack brings, to which the runs pinned to the build before it move.
export * from '../../workflows/index.ts';

/** Does nothing: it only makes this bundle another build. */
export async function buildCMarker(): Promise<void> {}
