// Every workflow the worker runs, exported by name. Deterministic code only (see
// docs/architecture.md): no I/O, no clocks, no randomness outside Temporal's APIs.
export { fundWallet } from './fund-wallet.ts';
export { fundBatch } from './fund-batch.ts';
export { fundLane } from './fund-lane.ts';
export { payWallet } from './pay-wallet.ts';
export { reconcileFundings } from './sweep.ts';
export { onboardEmbeddedSession } from './onboard-embedded-session.ts';
export { deliverWebhooks } from './deliver-webhooks.ts';
export { purgeExpired } from './purge-expired.ts';
export { settleDay } from './settle-day.ts';
