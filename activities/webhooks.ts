// The webhook deliverer's activity: one round of polling the outbox for due deliveries and sending
// them (webhooks/deliverer.ts), heartbeating between batches so a lost worker's round is retried
// elsewhere within a minute; cancellation (a worker shutting down) ends the wait at once.
import { Context } from '@temporalio/activity';
import type { WebhookDeliverer } from '../webhooks/deliverer.ts';
import type {
  DeliverWebhooksActivities,
  DeliveryRoundInput,
  DeliveryRoundReport,
} from '../workflows/deliver-webhooks.contract.ts';

export function createWebhookActivities(deps: { deliverer: WebhookDeliverer }): DeliverWebhooksActivities {
  return {
    async deliverDueWebhooks(input: DeliveryRoundInput): Promise<DeliveryRoundReport> {
      const context = Context.current();
      const until = Date.now() + input.roundMs;
      const report: DeliveryRoundReport = { batches: 0, claimed: 0, succeeded: 0, retrying: 0, failed: 0 };
      while (Date.now() < until) {
        const batch = await deps.deliverer.deliverDue();
        report.batches += 1;
        report.claimed += batch.claimed;
        report.succeeded += batch.succeeded;
        report.retrying += batch.retrying;
        report.failed += batch.failed;
        context.heartbeat();
        // Nothing was due: wait a poll interval (woken by cancellation); a full batch goes on at once.
        if (batch.claimed === 0) await context.sleep(Math.min(input.pollIntervalMs, Math.max(until - Date.now(), 0)));
      }
      return report;
    },
  };
}
