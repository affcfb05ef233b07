// `walletflow webhooks endpoints create|get|delete`, `webhooks deliveries`, `webhooks redeliver`:
// the webhook routes of the ops API (contract-decisions section 13). An endpoint's secret is
// printed once, when it is created (the API never shows it again).
import type { CreateWebhookEndpoint, WebhookDelivery } from '../client/ops-client.generated.ts';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { printJson, printText, runOps, table, type OpsCommandOptions } from './output.ts';

const deliveryRow = (delivery: WebhookDelivery) => [
  delivery.id,
  delivery.status,
  delivery.eventType,
  String(delivery.attempts),
  delivery.createdAt,
];

export const runWebhookEndpointCreate = (url: string, options: OpsCommandOptions & { events: string }) =>
  runOps('webhooks endpoints create', options, async (client) => {
    const events = options.events
      .split(',')
      .map((event) => event.trim())
      .filter((event) => event !== '');
    if (events.length === 0)
      throw new CliInputError(
        '--events needs at least one event type, e.g. funding.approved,payment.succeeded',
        exitCodes.usage,
      );
    const { body } = await client.createWebhookEndpoint({
      body: { url, events: events as CreateWebhookEndpoint['events'] },
    });
    if (options.output === 'json') return printJson(body);
    printText(
      table([
        ['endpoint', body.id],
        ['url', body.url],
        ['events', body.events.join(' ')],
        ['secret (shown once)', body.secret],
      ]),
    );
  });

export const runWebhookEndpointGet = (endpointId: string, options: OpsCommandOptions) =>
  runOps('webhooks endpoints get', options, async (client) => {
    const { body } = await client.getWebhookEndpoint({ endpointId });
    if (options.output === 'json') return printJson(body);
    printText(
      table([
        ['endpoint', body.id],
        ['url', body.url],
        ['events', body.events.join(' ')],
        ['created', body.createdAt],
      ]),
    );
  });

export const runWebhookEndpointDelete = (endpointId: string, options: OpsCommandOptions) =>
  runOps('webhooks endpoints delete', options, async (client) => {
    await client.deleteWebhookEndpoint({ endpointId });
    if (options.output === 'json') return printJson({ id: endpointId, deleted: true });
    printText(`endpoint ${endpointId} deleted`);
  });

export const runWebhookDeliveries = (
  options: OpsCommandOptions & {
    endpointId?: string;
    status?: 'PENDING' | 'SUCCEEDED' | 'FAILED';
    limit: string;
    cursor?: string;
  },
) =>
  runOps('webhooks deliveries', options, async (client) => {
    const limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200)
      throw new CliInputError('--limit must be a whole number from 1 to 200', exitCodes.usage);
    const { body } = await client.listWebhookDeliveries({
      limit,
      ...(options.endpointId ? { endpointId: options.endpointId } : {}),
      ...(options.status ? { status: options.status } : {}),
      ...(options.cursor ? { cursor: options.cursor } : {}),
    });
    if (options.output === 'json') return printJson(body);
    printText(table([['DELIVERY', 'STATUS', 'EVENT', 'ATTEMPTS', 'CREATED'], ...body.items.map(deliveryRow)]));
    if (body.nextCursor) printText(`next page: --cursor ${body.nextCursor}`);
  });

export const runWebhookRedeliver = (deliveryId: string, options: OpsCommandOptions & { actor?: string }) =>
  runOps('webhooks redeliver', options, async (client) => {
    const { body } = await client.redeliverWebhook({
      deliveryId,
      ...(options.actor ? { opsActor: options.actor } : {}),
    });
    if (options.output === 'json') return printJson(body);
    printText(table([['DELIVERY', 'STATUS', 'EVENT', 'ATTEMPTS', 'CREATED'], deliveryRow(body)]));
  });
