// deliverWebhooks: the durable deliverer of webhooks (contract-decisions section 13). One
// long-running workflow per deployment; each round is an activity that polls the outbox for due
// deliveries (webhooks/webhook-store.ts, SKIP LOCKED), sends them and records every attempt, and
// heartbeats; after `roundsPerRun` rounds it continues as new. The retry schedule lives in the
// deliveries' rows (next_attempt_at), not in this history, and no secret or body passes through it.
import { continueAsNew, proxyActivities, setWorkflowOptions } from '@temporalio/workflow';
import {
  deliverWebhooksActivityTimeouts,
  type DeliverWebhooksActivities,
  type DeliverWebhooksInput,
  type DeliverWebhooksWorkflow,
} from './deliver-webhooks.contract.ts';

const { deliverDueWebhooks } = proxyActivities<DeliverWebhooksActivities>({
  startToCloseTimeout: deliverWebhooksActivityTimeouts.startToCloseMs,
  heartbeatTimeout: deliverWebhooksActivityTimeouts.heartbeatMs,
  // A round that fails (the database away) is tried again, for ever: deliveries wait in their rows.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// Auto-upgrade (docs/changing-workflows.md): a run moves to the current build at its next workflow
// task (a timer firing, an activity finishing, a signal), and that build replays its history: a
// change to its commands goes behind patched() while a run of the code before may be open.
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, deliverWebhooks);

export async function deliverWebhooks(input: DeliverWebhooksInput): Promise<void> {
  const rounds = input.roundsPerRun ?? 100;
  const roundMs = Math.min(input.roundMs ?? 30_000, deliverWebhooksActivityTimeouts.maxRoundMs);
  for (let round = 0; round < rounds; round += 1) {
    await deliverDueWebhooks({ pollIntervalMs: input.pollIntervalMs, roundMs });
  }
  await continueAsNew<DeliverWebhooksWorkflow>(input);
}
