// An id a caller gives, in a path, a query or a form, is read in lower case by every schema that reads one
// (domain/ids.ts idSchema): PostgreSQL finds a row whatever the case, but an id is a text key too.
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { idSchema } from '../../domain/ids.ts';
import { allRoutes } from '../../api/docs/openapi.ts';
import { consoleRoutes } from '../../api/console/console-router.ts';
import { fundingIdSchema } from '../../api/ops/fundings-routes.ts';
import { batchIdSchema } from '../../api/ops/batches-routes.ts';
import { linkIdSchema } from '../../api/ops/links-routes.ts';
import { webhookDeliveryIdSchema, webhookEndpointIdSchema } from '../../api/ops/webhooks-routes.ts';
import { progressIdSchema } from '../../api/embedded/progress.ts';

const upper = '3F2504E0-4F89-41D3-9A0C-0305E82C3301';

describe('an id a caller gives', () => {
  it('is read in lower case by each schema of a walletflow id', () => {
    // Found by a read: z.uuid() takes either case and keeps it, and an upper-case id found its row and then missed its
    // key: a link's sealed tokens (a 500), a batch runner's workflow id (a second runner), a funding's hold reference.
    const schemas: Record<string, z.ZodType> = {
      idSchema,
      fundingIdSchema,
      batchIdSchema,
      linkIdSchema,
      webhookDeliveryIdSchema,
      webhookEndpointIdSchema,
      progressIdSchema,
    };
    for (const [name, schema] of Object.entries(schemas)) expect(schema.parse(upper), name).toBe(upper.toLowerCase());
  });

  it('is read in lower case by every route parameter declared as a UUID', () => {
    let uuidParameters = 0;
    for (const route of [...allRoutes, ...consoleRoutes]) {
      for (const [name, parameter] of Object.entries(route.params ?? {})) {
        const schema = parameter.schema as z.ZodType;
        if (!schema.safeParse(upper.toLowerCase()).success || schema.safeParse('not-a-uuid').success) continue;
        uuidParameters += 1;
        // (A parameter that takes other ids too, a payment's, which may be the wallet's, is none: its case is its own.)
        expect(schema.parse(upper), `${route.path} ${name}`).toBe(upper.toLowerCase());
      }
    }
    expect(uuidParameters).toBeGreaterThan(10);
  });
});
