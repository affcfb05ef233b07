// The webhook deliverer's activity: one round of polling the outbox for due deliveries and sending
// them (webhooks/deliverer.ts), heartbeating between claims and as sends end, so a lost worker's round is retried
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
      return deps.deliverer.deliverFor({
        roundMs: input.roundMs,
        pollIntervalMs: input.pollIntervalMs,
        // Woken by cancellation (a worker shutting down): the sends under way end, and the round with them.
        sleep: (ms) => context.sleep(ms),
        heartbeat: () => context.heartbeat(),
      });
    },
  };
}
