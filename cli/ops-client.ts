// The CLI's way into the ops API: the generated typed client (client/ops-client.generated.ts) for
// the target ops-target.ts resolved, and the two lookups that answer "no such record" with null.
import {
  createOpsClient,
  OpsProblemError,
  type Funding,
  type OpsClient,
  type Payment,
} from '../client/ops-client.generated.ts';
import type { OpsTarget } from './ops-target.ts';

export { OpsNetworkError, OpsProblemError, type OpsClient } from '../client/ops-client.generated.ts';

export function opsClientFor(target: OpsTarget, options: { timeoutMs?: number } = {}): OpsClient {
  return createOpsClient({ baseUrl: target.apiBase, key: target.key, ...options });
}

/** The API's own 404 for an unknown id (a 404 from something else, a wrong --api path, is an error). */
const notFound = (error: unknown, code: string) =>
  error instanceof OpsProblemError && error.status === 404 && error.code === code;

/** GET /ops/fundings/{id}, or null when the API does not know it. */
export async function findFunding(client: OpsClient, fundingId: string): Promise<Funding | null> {
  try {
    return (await client.getFunding({ fundingId })).body;
  } catch (error) {
    if (notFound(error, 'FUNDING_NOT_FOUND')) return null;
    throw error;
  }
}

/** GET /ops/payments/{id}, or null when the API does not know it. */
export async function findPayment(client: OpsClient, paymentId: string): Promise<Payment | null> {
  try {
    return (await client.getPayment({ paymentId })).body;
  } catch (error) {
    if (notFound(error, 'PAYMENT_NOT_FOUND')) return null;
    throw error;
  }
}
