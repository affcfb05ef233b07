// Build C of the deploy tests (test/deploy/worker-deployment-cases.ts): today's workflows and their
// commands unchanged, in a bundle of its own (one workflow more), so a build id of its own: the
// build a restarted dev stack brings, to which the runs pinned to the build before it move, and the
// newest build, starting while another ramps.
export * from '../../workflows/index.ts';

/** Does nothing: it only makes this bundle another build. */
export async function buildCMarker(): Promise<void> {}
