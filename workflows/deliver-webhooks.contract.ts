// deliverWebhooks's contract: the type name, input, the one workflow id the worker keeps running,
// and the one start every starter uses. Imported by the workflow bundle: type imports only, and
// the workflow's signature declared here (the workflow imports this file, never the reverse).
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { DeliveryRoundReport } from '../domain/webhook.ts';

/** The workflow type: the name Temporal and every stored history know it by (the function's name). */
export const deliverWebhooksWorkflowType = 'deliverWebhooks';

export interface DeliverWebhooksInput {
  /** How long the deliverer waits when nothing is due (WEBHOOK_POLL_INTERVAL_MS). */
  pollIntervalMs: number;
  /** How long one delivery activity keeps polling before it returns to the workflow; absent: 30 s (at most 2 min). */
  roundMs?: number;
  /** Rounds before the workflow continues as new (a short history); absent: 100. */
  roundsPerRun?: number;
}

/** deliverWebhooks's signature: it never returns (it continues as new). */
export type DeliverWebhooksWorkflow = (input: DeliverWebhooksInput) => Promise<void>;

/** The one deliverer the worker keeps running; tests start their own under other ids. */
export const deliverWebhooksWorkflowId = 'walletflow-deliver-webhooks';

export interface DeliveryRoundInput {
  pollIntervalMs: number;
  roundMs: number;
}

/** What one round reports (its one shape is the domain's). */
export type { DeliveryRoundReport };

/** The activity deliverWebhooks schedules (activities/webhooks.ts implements it, taking its types from here). */
export interface DeliverWebhooksActivities {
  /** One round: polls the outbox for due deliveries and sends them, heartbeating between batches, for `roundMs`. */
  deliverDueWebhooks(input: DeliveryRoundInput): Promise<DeliveryRoundReport>;
}

/** The delivery activity's time-outs: a round plus its last sends; heartbeats between batches. */
export const deliverWebhooksActivityTimeouts = {
  startToCloseMs: 5 * 60_000,
  heartbeatMs: 60_000,
  maxRoundMs: 120_000,
} as const;

/**
 * Starts the deliverer, or finds it running (USE_EXISTING): every worker calls this at start, and
 * one runs. A closed one (terminated by hand) is started again.
 */
export function startDeliverWebhooks(
  client: Client,
  options: { taskQueue: string; workflowId?: string; input: DeliverWebhooksInput },
): Promise<WorkflowHandle<DeliverWebhooksWorkflow>> {
  return client.workflow.start<DeliverWebhooksWorkflow>(deliverWebhooksWorkflowType, {
    taskQueue: options.taskQueue,
    workflowId: options.workflowId ?? deliverWebhooksWorkflowId,
    args: [options.input],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
