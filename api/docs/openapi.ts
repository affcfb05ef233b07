// The OpenAPI 3.1 document of walletflow's HTTP surface (contract-decisions section 8), built from
// the zod schemas the routes validate with and build their answers from: z.toJSONSchema writes
// JSON Schema 2020-12, OpenAPI 3.1's own dialect. Served by api/docs.ts at /docs/openapi.json.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { requestReferenceNoSchema, sessionIdSchema, sessionPayloadSchema } from '../../domain/embedded-session.ts';
import { createFundingSchema, fundingSchema, idempotencyKeySchema, resolveFundingSchema } from '../../domain/funding.ts';
import { linkSchema } from '../../domain/link.ts';
import { createPaymentSchema, paymentSchema } from '../../domain/payment.ts';
import { outcomeStatusSchema } from '../embedded/outcome-messages.ts';
import { APP_COOKIE } from '../embedded/web-sessions.ts';
import { callbackQuerySchema, startQuerySchema } from '../connect/connect-routes.ts';
import { SESSION_BODY_LIMIT_BYTES, sessionCreatedSchema, sessionRefusalSchema } from '../embedded/session-url.ts';
import { livenessSchema, readinessSchema } from '../http/health.ts';
import { appFormSchema, appJsonErrorSchema, appSessionStateSchema, progressIdSchema } from '../embedded/landing.ts';
import { linkProfileSchema } from '../../links/link-view.ts';
import { fundingIdSchema, fundingListQuerySchema, fundingPageSchema } from '../ops/fundings-routes.ts';
import { linkIdSchema, loginUrlSchema } from '../ops/links-routes.ts';
import { loginUrlRequestSchema } from '../../links/login-grants.ts';
import { actorSchema } from '../ops/ops-actor.ts';
import { paymentIdSchema, paymentListQuerySchema, paymentPageSchema, resolveBodySchema } from '../ops/payments-routes.ts';
import { problemSchema } from '../http/problem.ts';
import {
  accountViewSchema,
  adjustmentViewSchema,
  createAdjustmentSchema,
  fundingRefusalCodes,
  ledgerEntryViewSchema,
  settlementDateSchema,
  settlementSchema,
} from '../../domain/ledger.ts';
import { accountPathSchema, accountQuerySchema, entriesQuerySchema, settlementQuerySchema } from '../ops/accounts-routes.ts';
import { linkListSchema, linkSearchQuerySchema } from '../ops/links-routes.ts';
import { appActivitySchema } from '../embedded/landing.ts';
import { pageSchema } from '../../lib/page-cursor.ts';
import { projectRoot } from '../../lib/project-root.ts';
import {
  createWebhookEndpointSchema,
  webhookDeliverySchema,
  webhookEndpointCreatedSchema,
  webhookEndpointSchema,
  webhookEventBodySchema,
} from '../../domain/webhook.ts';
import {
  webhookDeliveryIdSchema,
  webhookDeliveryListQuerySchema,
  webhookDeliveryPageSchema,
  webhookEndpointIdSchema,
} from '../ops/webhooks-routes.ts';

type JsonSchema = Record<string, unknown>;
type Io = 'input' | 'output';

const COMPONENTS = '#/components/schemas/';

/** Request bodies, as clients write them (zod's input side: defaults optional, coercions as sent). */
const requestSchemas = {
  CreateFunding: createFundingSchema,
  CreatePayment: createPaymentSchema,
  ResolvePayment: resolveBodySchema,
  ResolveFunding: resolveFundingSchema,
  // expiresAt's checks against the clock (in the future, at most ten years ahead) are refinements:
  // they do not change the shape, so any clock gives the same document.
  SessionPayload: sessionPayloadSchema(0),
  AppForm: appFormSchema,
  LoginUrlRequest: loginUrlRequestSchema,
  CreateAdjustment: createAdjustmentSchema,
  CreateWebhookEndpoint: createWebhookEndpointSchema,
} satisfies Record<string, z.ZodType>;

/** Answers, as the routes build them (zod's output side). */
const responseSchemas = {
  Funding: fundingSchema,
  FundingPage: fundingPageSchema,
  Payment: paymentSchema,
  PaymentPage: paymentPageSchema,
  Link: linkSchema,
  LinkProfile: linkProfileSchema,
  LoginUrl: loginUrlSchema,
  Problem: problemSchema,
  Liveness: livenessSchema,
  Readiness: readinessSchema,
  SessionCreated: sessionCreatedSchema,
  SessionRefusal: sessionRefusalSchema,
  AppSessionState: appSessionStateSchema,
  AppOutcome: outcomeStatusSchema,
  AppJsonError: appJsonErrorSchema,
  AppActivity: appActivitySchema,
  Account: accountViewSchema,
  Adjustment: adjustmentViewSchema,
  LedgerEntryPage: pageSchema(ledgerEntryViewSchema),
  Settlement: settlementSchema,
  LinkList: linkListSchema,
  WebhookEndpointCreated: webhookEndpointCreatedSchema,
  WebhookEndpoint: webhookEndpointSchema,
  WebhookDelivery: webhookDeliverySchema,
  WebhookDeliveryPage: webhookDeliveryPageSchema,
  WebhookEvent: webhookEventBodySchema,
} satisfies Record<string, z.ZodType>;

type ComponentName = keyof typeof requestSchemas | keyof typeof responseSchemas;

/**
 * A transform's output has no JSON Schema; the profile's (`value ?? null`) only normalise what
 * they read, so a pipe into a transform is documented by the schema it reads.
 */
const documentTransformsByInput: NonNullable<z.core.ToJSONSchemaParams['override']> = (ctx) => {
  const def = ctx.zodSchema._zod.def;
  if (def.type !== 'pipe' || def.out._zod.def.type !== 'transform') return;
  const { $schema: _dialect, ...input } = z.toJSONSchema(def.in, { io: 'output', override: documentTransformsByInput }) as JsonSchema;
  for (const key of Object.keys(ctx.jsonSchema)) delete (ctx.jsonSchema as JsonSchema)[key];
  Object.assign(ctx.jsonSchema, input);
};

const conversion = (io: Io) =>
  ({
    io,
    target: 'draft-2020-12',
    override: documentTransformsByInput,
    // Transforms become {} here and are replaced by the override above; anything else fails the build.
    unrepresentable: (ctx) => (ctx.zodSchema._zod.def.type === 'transform' ? 'any' : 'throw'),
  }) satisfies z.core.ToJSONSchemaParams;

/** One schema of the document, inline (parameters): no `$schema`, every component by `$ref`. */
function schemaOf(schema: z.ZodType, io: Io): JsonSchema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, conversion(io)) as JsonSchema;
  return json;
}

/** The named schemas, each once; one refers to another (a page to its items) by `$ref`. */
function componentSchemas(schemas: Record<string, z.ZodType>, io: Io): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const { schemas: converted } = z.toJSONSchema(registry, { ...conversion(io), uri: (id) => `${COMPONENTS}${id}` });
  return Object.fromEntries(
    Object.entries(converted).map(([id, json]) => {
      const { $schema: _dialect, $id: _id, ...rest } = json as JsonSchema;
      return [id, rest];
    }),
  );
}

const ref = (name: ComponentName) => ({ $ref: `${COMPONENTS}${name}` });

// ---- parameters ------------------------------------------------------------------------------

function parameter(location: 'path' | 'query' | 'header', name: string, schema: z.ZodType, description: string, required = location === 'path') {
  return { name, in: location, required, description, schema: schemaOf(schema, 'input') };
}

/** A query schema's fields, one parameter each (`style: form`, OpenAPI's default for the query). */
function queryParameters(schema: z.ZodObject, descriptions: Record<string, string> = {}) {
  const json = schemaOf(schema, 'input') as { properties?: Record<string, JsonSchema>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query',
    required: json.required?.includes(name) ?? false,
    ...(descriptions[name] ? { description: descriptions[name] } : {}),
    schema: property,
  }));
}

const idempotencyKey = parameter(
  'header',
  'Idempotency-Key',
  idempotencyKeySchema,
  'Required. One business request: a repeated key with the same body answers 200 and the same record (nothing new starts); with another body 422 `IDEMPOTENCY_KEY_REUSED`.',
  true,
);

const listFilters = {
  status: 'only this status',
  from: 'created at or after (ISO-8601 with an offset)',
  to: 'created before (ISO-8601 with an offset)',
  limit: 'items per page (1 to 200, default 50)',
  cursor: 'the `nextCursor` of the previous page',
};

// ---- responses -------------------------------------------------------------------------------

const header = (description: string, schema: JsonSchema = { type: 'string' }) => ({ description, schema });
const retryAfter = header('seconds to wait before retrying', { type: 'integer', minimum: 1 });

const json = (name: ComponentName, description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: ref(name) } },
});

/** A problem document; `codes` are the values of its `code` member for this status. */
const problem = (description: string, codes: string[], headers?: Record<string, unknown>) => ({
  description: `${description} (\`code\`: ${codes.map((code) => `\`${code}\``).join(', ')})`,
  ...(headers ? { headers } : {}),
  content: { 'application/problem+json': { schema: ref('Problem') } },
});

const html = (description: string, headers?: Record<string, unknown>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'text/html': { schema: { type: 'string' } } },
});

const redirect = (description: string) => ({ description, headers: { Location: header('where to go next') } });

/** What every ops route may answer besides its own outcomes. */
const opsCommon = {
  '401': problem('no or a wrong ops API key', ['UNAUTHORIZED'], { 'WWW-Authenticate': header('`Bearer realm="walletflow-ops"`') }),
  '403': problem('the ops API key lacks the scope this route needs (OPS_API_KEYS `name:scopes:key`)', ['SCOPE_REQUIRED']),
  '429': problem('too many requests with a wrong key from this address', ['TOO_MANY_FAILED_ATTEMPTS'], { 'Retry-After': retryAfter }),
  '500': problem('an unexpected failure (logged)', ['INTERNAL']),
  '503': problem(
    'too many requests at once (issue 25): nothing was stored; send the same request, with the same Idempotency-Key, again after Retry-After',
    ['OVERLOADED'],
    { 'Retry-After': retryAfter },
  ),
};

/** What a route with a JSON body may answer when the framework cannot read the body (nothing stored). */
const unreadableJsonBody = {
  '413': problem('the body is larger than 16 KiB', ['BODY_TOO_LARGE']),
  '415': problem('a Content-Encoding or charset that is not supported (the body must be UTF-8 JSON)', ['UNSUPPORTED_CONTENT_ENCODING', 'UNSUPPORTED_CHARSET']),
};
const malformedBodyCodes = ['MALFORMED_JSON', 'MALFORMED_BODY', 'REQUEST_ABORTED', 'BODY_LENGTH_MISMATCH'];

const opsSecurity = [{ opsApiKey: [] }];
const appSecurity = [{ appSession: [] }];

const jsonBody = (name: ComponentName, description?: string) => ({
  required: true,
  ...(description ? { description } : {}),
  content: { 'application/json': { schema: ref(name) } },
});

// ---- operations ------------------------------------------------------------------------------

const tooManyPages = html('too many requests from this address (PUBLIC_RATE_LIMIT_PER_MINUTE)', { 'Retry-After': retryAfter });
const tooManyPolls = json('AppJsonError', 'too many requests from this address (`RATE_LIMITED`)', { 'Retry-After': retryAfter });

const health = {
  '/healthz': {
    get: {
      tags: ['health'],
      operationId: 'liveness',
      summary: 'Liveness: the process answers',
      responses: { '200': json('Liveness', 'alive') },
    },
  },
  '/readyz': {
    get: {
      tags: ['health'],
      operationId: 'readiness',
      summary: 'Readiness: PostgreSQL, Temporal and the wallet service, each checked with a 3 s limit',
      responses: {
        '200': json('Readiness', 'every dependency is up'),
        '503': json('Readiness', 'a dependency is down (its `error` says why)'),
      },
    },
  },
  '/metrics': {
    get: {
      tags: ['health'],
      operationId: 'metrics',
      summary: 'Prometheus metrics (text exposition format 0.0.4)',
      responses: {
        '200': {
          description: 'the API process’s metrics',
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
      },
    },
  },
};

const docs = {
  '/docs': {
    get: {
      tags: ['docs'],
      operationId: 'docsViewer',
      summary: 'This documentation, in an interactive viewer (Swagger UI, served locally)',
      responses: { '200': html('the viewer page') },
    },
  },
  '/docs/openapi.json': {
    get: {
      tags: ['docs'],
      operationId: 'openApiDocument',
      summary: 'This OpenAPI 3.1 document',
      responses: { '200': { description: 'the document', content: { 'application/json': { schema: { type: 'object' } } } } },
    },
  },
};

const connect = {
  '/connect/start': {
    get: {
      tags: ['connect'],
      operationId: 'connectStart',
      summary: 'Start a standalone login from a login token: a single-use state (10 minutes) bound to a cookie, then the wallet’s login page',
      parameters: queryParameters(startQuerySchema, {
        login: 'a login token: from POST /ops/links/login-urls, or an HS256 JWT signed with LOGIN_SIGNING_KEY (`sub` = partner user id, `exp` ≤ 10 minutes, optional `mobile`); single use',
        partnerUserId: 'refused (400): the partner user id comes only from a login token',
      }),
      responses: {
        '302': redirect('to the connect service’s login page; sets the `walletflow_login` cookie the callback requires'),
        '400': html('no login token, or one that is not valid, used or expired; a bare partnerUserId'),
        '429': tooManyPages,
        '500': html('an unexpected failure (logged)'),
      },
    },
  },
  '/connect/callback': {
    get: {
      tags: ['connect'],
      operationId: 'connectCallback',
      summary: 'Where the connect service returns the user: checks the state, exchanges the code, stores the link',
      parameters: queryParameters(callbackQuerySchema),
      responses: {
        '200': html('linked; the page names the link (no CONNECT_RETURN_URL)', { 'X-Link-Id': header('the new link’s id') }),
        '303': redirect('linked: to CONNECT_RETURN_URL with `?linkId=…&status=linked`'),
        '400': html('not linked: a missing, unknown, used or expired state; the user cancelled; the wallet refused the code'),
        '429': tooManyPages,
        '500': html('an unexpected failure (logged)'),
        '502': html('not linked: the wallet service did not answer in time'),
      },
    },
  },
};

const embedded = {
  '/embedded/session': {
    post: {
      tags: ['embedded'],
      operationId: 'createEmbeddedSession',
      summary: 'The session URL: the wallet service hands over a user’s tokens when the user opens the partner’s tile',
      description: [
        'Checked in this order: the rate limit per sender (SESSION_RATE_LIMIT_PER_MINUTE, 429), the sender',
        'allowlist (SESSION_ALLOWED_IPS; the client address is the peer, or `X-Forwarded-For` from a',
        'TRUSTED_PROXIES proxy; 403 before anything is read), `Content-Type: application/json` (400), the',
        '`Request-Reference-No` header (400), then the body (at most 16 KiB; 400 `VALIDATION_ERROR` naming',
        'the field and rule, never the value). `expiresAt` must lie in the future, in seconds (a millisecond value is refused); fields the interface does not name are ignored.',
        'The tokens are stored encrypted and the answer goes out at once; onboarding (profile, link) runs',
        'afterwards. The session id opens the landing page once, within EMBEDDED_SESSION_TTL_SECONDS.',
        'Answers carry `Cache-Control: no-store`; other methods get 405 (`Allow: POST`).',
      ].join(' '),
      parameters: [parameter('header', 'Request-Reference-No', requestReferenceNoSchema, 'the wallet service’s id of this call (UUIDv4)', true)],
      requestBody: jsonBody('SessionPayload', `the user’s tokens (at most ${SESSION_BODY_LIMIT_BYTES} bytes)`),
      responses: {
        '200': json('SessionCreated', 'stored; open the landing page with `?sessionId=…`'),
        '400': json(
          'SessionRefusal',
          'a malformed call (`code`: `UNSUPPORTED_CONTENT_TYPE`, `INVALID_REQUEST_REFERENCE_NO`, `MALFORMED_JSON`, `VALIDATION_ERROR`, `BODY_TOO_LARGE`, or another body-reading code)',
        ),
        '403': json('SessionRefusal', 'the sender is not in SESSION_ALLOWED_IPS (`FORBIDDEN`)'),
        '429': json('SessionRefusal', 'too many calls from this sender (`RATE_LIMITED`)', { 'Retry-After': retryAfter }),
        '500': json('SessionRefusal', 'the session could not be stored; retry (`INTERNAL`)'),
      },
    },
  },
};

const appForm = (action: string) => ({
  required: true,
  content: { 'application/x-www-form-urlencoded': { schema: ref('AppForm') } },
  description: `the ${action} form of the landing page (at most 4 KiB and 10 fields)`,
});

const formResponses = (progressPath: string) => ({
  '200': html('onboarding is still running: the loading page'),
  '303': redirect(`started (or already started by this form): to its progress page, ${progressPath}`),
  '400': html('the page again with a message about the amount, or a malformed form key'),
  '401': html('no web session, or the wallet no longer accepts the user’s tokens (reopen from the wallet)'),
  '403': html('the CSRF token is missing or not this session’s'),
  '409': html('this form was already sent with another amount'),
  '422': html('the page again with the refusal in words at the form: not enough balance or a limit (nothing stored)'),
  '413': html('the form is too large'),
  '415': html('a charset or Content-Encoding that is not supported'),
  '429': tooManyPages,
  '500': html('an unexpected failure (logged)'),
  '503': html('onboarding failed: reopen the app from the wallet'),
});

const progress = (kind: 'top-up' | 'payment', path: string) => ({
  [`${path}/{id}`]: {
    get: {
      tags: ['landing'],
      operationId: kind === 'top-up' ? 'appTopUpPage' : 'appPaymentPage',
      summary: `The progress page of one of this web session’s ${kind}s (polls its status)`,
      security: appSecurity,
      parameters: [parameter('path', 'id', progressIdSchema, `the ${kind}’s id`)],
      responses: {
        '200': html('the progress page'),
        '401': html('no web session'),
        '404': html(`no such ${kind} in this web session`),
        '429': tooManyPages,
      },
    },
  },
  [`${path}/{id}/status`]: {
    get: {
      tags: ['landing'],
      operationId: kind === 'top-up' ? 'appTopUpStatus' : 'appPaymentStatus',
      summary: `The ${kind}’s status and what the page tells the user`,
      security: appSecurity,
      parameters: [parameter('path', 'id', progressIdSchema, `the ${kind}’s id`)],
      responses: {
        '200': json('AppOutcome', 'the outcome; `final` once no further change is expected'),
        '401': json('AppJsonError', 'no web session (`NO_SESSION`)'),
        '404': json('AppJsonError', `no such ${kind} in this web session (\`NOT_FOUND\`)`),
        '429': tooManyPolls,
      },
    },
  },
});

const landing = {
  '/app': {
    get: {
      tags: ['landing'],
      operationId: 'appLanding',
      summary: 'The landing page in the wallet app’s web view',
      description: [
        'With `sessionId` (from the session URL): the id is used up atomically and traded for the web session',
        `cookie \`${APP_COOKIE}\` (HttpOnly, SameSite=Lax, Path=/app), set on the same 200 that shows the page; the page`,
        'drops the id from its address, so a reload asks for /app. Without it: the page of the web session. Either way',
        'after a short wait for onboarding. Pages are HTML with their own nonce CSP.',
      ].join(' '),
      security: [{}, ...appSecurity],
      parameters: [
        parameter('query', 'sessionId', sessionIdSchema, 'the one-time session id the session URL gave the wallet service'),
      ],
      responses: {
        '200': html('the home page (top up and pay), or the loading page while onboarding runs', {
          'Set-Cookie': header(`with a session id that was just used up: the web session cookie \`${APP_COOKIE}\``),
        }),
        '401': html('no web session, or the wallet no longer accepts the user’s tokens (reopen from the wallet)'),
        '404': html('an unknown session id'),
        '410': html('the session id was already used, or has expired'),
        '429': tooManyPages,
        '500': html('an unexpected failure (logged)'),
        '503': html('onboarding failed: reopen the app from the wallet'),
      },
    },
    head: {
      tags: ['landing'],
      operationId: 'appLandingHead',
      summary: 'A link preview or prefetch: never uses up a session id',
      security: [{}, ...appSecurity],
      parameters: [parameter('query', 'sessionId', sessionIdSchema, 'a session id: answered 405, left unused')],
      responses: {
        '200': { description: 'as GET without a session id, without the body' },
        '401': { description: 'no web session' },
        '405': { description: 'a session id is only used by GET', headers: { Allow: header('`GET`') } },
        '503': { description: 'onboarding failed' },
      },
    },
  },
  '/app/activity': {
    get: {
      tags: ['landing'],
      operationId: 'appActivity',
      summary: 'The money page’s available balance and recent withdrawals, deposits and payments with their states (polled while any is under way)',
      security: appSecurity,
      responses: {
        '200': json('AppActivity', 'the balance and recent activity'),
        '401': json('AppJsonError', 'no web session (`NO_SESSION`)'),
        '429': tooManyPolls,
      },
    },
  },
  '/app/status': {
    get: {
      tags: ['landing'],
      operationId: 'appSessionState',
      summary: 'The web session’s onboarding state, for the loading page’s poll',
      security: appSecurity,
      responses: {
        '200': json('AppSessionState', 'the state'),
        '401': json('AppJsonError', 'no web session (`NO_SESSION`)'),
        '429': tooManyPolls,
      },
    },
  },
  '/app/top-up': {
    post: {
      tags: ['landing'],
      operationId: 'appTopUp',
      summary: 'Top up the user’s wallet (a funding to the session’s link)',
      security: appSecurity,
      requestBody: appForm('top-up'),
      responses: formResponses('/app/top-ups/{id}'),
    },
  },
  '/app/pay': {
    post: {
      tags: ['landing'],
      operationId: 'appPay',
      summary: 'Pay the merchant from the user’s wallet',
      security: appSecurity,
      requestBody: appForm('pay'),
      responses: formResponses('/app/payments/{id}'),
    },
  },
  ...progress('top-up', '/app/top-ups'),
  ...progress('payment', '/app/payments'),
};

const fundingId = parameter('path', 'fundingId', fundingIdSchema, 'the funding’s id (not a UUID: 404)');
const paymentId = parameter('path', 'paymentId', paymentIdSchema, 'walletflow’s id of the payment (`id`; not the wallet’s `paymentId`)');
const linkId = parameter('path', 'linkId', linkIdSchema, 'the link’s id (not a UUID: 400 `INVALID_LINK_ID`)');

const account = parameter('path', 'account', accountPathSchema, '`TREASURY` (or another system account: `IN_FLIGHT`, `WALLET_CLEARING`, `MERCHANT_REVENUE`, `CAPITAL`), else a partner user id');

const opsLedger = {
  '/ops/accounts/{account}': {
    get: {
      tags: ['ledger'],
      operationId: 'getAccount',
      summary: 'An account of the partner’s ledger: balance (posted), held (pending fundings), available',
      security: opsSecurity,
      parameters: [account, ...queryParameters(accountQuerySchema)],
      responses: {
        '200': json('Account', 'the account (zeros for a user with no entries yet)'),
        '400': problem('not an account', ['INVALID_ACCOUNT']),
        ...opsCommon,
      },
    },
  },
  '/ops/accounts/{account}/adjustments': {
    post: {
      tags: ['ledger'],
      operationId: 'adjustAccount',
      summary: 'Adjust a partner user’s account (the other leg is TREASURY) or the treasury (the other leg is CAPITAL)',
      security: opsSecurity,
      parameters: [account, idempotencyKey],
      requestBody: jsonBody('CreateAdjustment', 'a signed amount: negative debits the account'),
      responses: {
        '200': json('Adjustment', 'a repeated key with the same body: the same adjustment'),
        '201': json('Adjustment', 'the adjustment, posted'),
        '400': problem('a missing or malformed key or body, or an account that cannot be adjusted', ['IDEMPOTENCY_KEY_INVALID', 'INVALID_ACCOUNT', 'VALIDATION_ERROR', ...malformedBodyCodes]),
        '422': problem('the key was used with another body, or a debit below available (nothing stored)', ['IDEMPOTENCY_KEY_REUSED', 'INSUFFICIENT_FUNDS']),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
  },
  '/ops/ledger/entries': {
    get: {
      tags: ['ledger'],
      operationId: 'listLedgerEntries',
      summary: 'Ledger entries, newest first, a page at a time (pending: a hold or its reversal)',
      security: opsSecurity,
      parameters: queryParameters(entriesQuerySchema),
      responses: {
        '200': json('LedgerEntryPage', 'a page of entries'),
        '400': problem('a malformed query', ['VALIDATION_ERROR']),
        ...opsCommon,
      },
    },
  },
  '/ops/settlements/{date}': {
    get: {
      tags: ['ledger'],
      operationId: 'getSettlement',
      summary: 'A day’s (SETTLEMENT_TZ) approved fundings and succeeded payments against the wallet’s records and the ledger',
      security: opsSecurity,
      parameters: [parameter('path', 'date', settlementDateSchema, 'the day, YYYY-MM-DD'), ...queryParameters(settlementQuerySchema)],
      responses: {
        '200': {
          description: 'matched, missing, mismatched, with totals; `?format=csv` gives CSV',
          content: { 'application/json': { schema: ref('Settlement') }, 'text/csv': { schema: { type: 'string' } } },
        },
        '400': problem('not a date', ['INVALID_DATE']),
        '501': problem('settlement is not configured', ['NOT_CONFIGURED']),
        ...opsCommon,
      },
    },
  },
};

const opsFundings = {
  '/ops/fundings': {
    post: {
      tags: ['fundings'],
      operationId: 'createFunding',
      summary: 'Fund a wallet: by cash-in code or to a linked wallet',
      security: opsSecurity,
      parameters: [idempotencyKey],
      requestBody: jsonBody('CreateFunding'),
      responses: {
        '200': json('Funding', 'a repeated key with the same body: the same funding'),
        '202': json('Funding', 'a new key: the funding, started'),
        '400': problem('a missing or malformed key or body; nothing stored', ['IDEMPOTENCY_KEY_INVALID', 'VALIDATION_ERROR', ...malformedBodyCodes]),
        '422': problem(
          'the key was used with another body, `recipient.linkId` names no link, the source’s available does not cover the amount, or a limit refuses it (its detail names the limit and what is left); nothing stored, no workflow',
          ['IDEMPOTENCY_KEY_REUSED', 'LINK_NOT_FOUND', ...fundingRefusalCodes],
        ),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
    get: {
      tags: ['fundings'],
      operationId: 'listFundings',
      summary: 'Fundings, newest first, a page at a time',
      security: opsSecurity,
      parameters: queryParameters(fundingListQuerySchema, listFilters),
      responses: {
        '200': json('FundingPage', 'a page'),
        '400': problem('a bad filter, or a cursor this API did not give', ['VALIDATION_ERROR', 'INVALID_CURSOR']),
        ...opsCommon,
      },
    },
  },
  '/ops/fundings/{fundingId}': {
    get: {
      tags: ['fundings'],
      operationId: 'getFunding',
      summary: 'A funding and its timeline',
      security: opsSecurity,
      parameters: [fundingId],
      responses: { '200': json('Funding', 'the funding'), '404': problem('no such funding', ['FUNDING_NOT_FOUND']), ...opsCommon },
    },
  },
  '/ops/fundings/{fundingId}/cancel': {
    post: {
      tags: ['fundings'],
      operationId: 'cancelFunding',
      summary: 'Cancel a funding that has not started executing (it ends FAILED, code CANCELLED)',
      security: opsSecurity,
      parameters: [fundingId],
      responses: {
        '200': json('Funding', 'cancelled'),
        '404': problem('no such funding', ['FUNDING_NOT_FOUND']),
        '409': problem('the funding is executing or final', ['FUNDING_NOT_CANCELLABLE']),
        ...opsCommon,
      },
    },
  },
  '/ops/fundings/{fundingId}/resolve': {
    post: {
      tags: ['fundings'],
      operationId: 'resolveFunding',
      summary: 'Settle a funding parked in NEEDS_REVIEW (contract section 11), after checking with the wallet operator: APPROVED posts it, FAILED means nothing was executed',
      security: opsSecurity,
      parameters: [
        fundingId,
        parameter('header', 'X-Ops-Actor', actorSchema, 'who resolves (recorded with the key’s identity in `review.resolution.by`); ignored when malformed'),
      ],
      requestBody: jsonBody('ResolveFunding', 'the outcome and why (plain text: no control characters or broken unicode)'),
      responses: {
        '200': json('Funding', 'resolved'),
        '400': problem('a malformed body', ['VALIDATION_ERROR', ...malformedBodyCodes]),
        '404': problem('no such funding', ['FUNDING_NOT_FOUND']),
        '409': problem('the funding is not in NEEDS_REVIEW', ['FUNDING_NOT_IN_REVIEW']),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
  },
};

const opsPayments = {
  '/ops/payments': {
    post: {
      tags: ['payments'],
      operationId: 'createPayment',
      summary: 'Take a merchant payment from a linked wallet',
      security: opsSecurity,
      parameters: [idempotencyKey],
      requestBody: jsonBody('CreatePayment'),
      responses: {
        '200': json('Payment', 'a repeated key with the same body: the same payment'),
        '202': json(
          'Payment',
          'a new key: the payment, started; the answer waits (up to 3 s) for the wallet’s create, so `paymentId` is the wallet’s id unless that create is slow (then null; `id` always works)',
        ),
        '400': problem('a missing or malformed key or body; nothing stored', ['IDEMPOTENCY_KEY_INVALID', 'VALIDATION_ERROR', ...malformedBodyCodes]),
        '422': problem('the key was used with another body, or `linkId` names no link', ['IDEMPOTENCY_KEY_REUSED', 'LINK_NOT_FOUND']),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
    get: {
      tags: ['payments'],
      operationId: 'listPayments',
      summary: 'Payments, newest first, a page at a time',
      security: opsSecurity,
      parameters: queryParameters(paymentListQuerySchema, listFilters),
      responses: {
        '200': json('PaymentPage', 'a page'),
        '400': problem('a bad filter, or a cursor this API did not give', ['VALIDATION_ERROR', 'INVALID_CURSOR']),
        ...opsCommon,
      },
    },
  },
  '/ops/payments/{paymentId}': {
    get: {
      tags: ['payments'],
      operationId: 'getPayment',
      summary: 'A payment, its timeline and any review',
      security: opsSecurity,
      parameters: [paymentId],
      responses: { '200': json('Payment', 'the payment'), '404': problem('no such payment', ['PAYMENT_NOT_FOUND']), ...opsCommon },
    },
  },
  '/ops/payments/{paymentId}/resolve': {
    post: {
      tags: ['payments'],
      operationId: 'resolvePayment',
      summary: 'Settle a payment parked in NEEDS_REVIEW, after checking with the wallet operator',
      security: opsSecurity,
      parameters: [
        paymentId,
        parameter('header', 'X-Ops-Actor', actorSchema, 'who resolves (recorded with the key’s fingerprint in `review.resolution.by`); ignored when malformed'),
      ],
      requestBody: jsonBody('ResolvePayment', 'the outcome and why (plain text: no control characters or broken unicode)'),
      responses: {
        '200': json('Payment', 'resolved'),
        '400': problem('a malformed body', ['VALIDATION_ERROR', ...malformedBodyCodes]),
        '404': problem('no such payment', ['PAYMENT_NOT_FOUND']),
        '409': problem('the payment is not in NEEDS_REVIEW', ['PAYMENT_NOT_IN_REVIEW']),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
  },
};

const opsLinks = {
  '/ops/links/login-urls': {
    post: {
      tags: ['links'],
      operationId: 'createLoginUrl',
      summary: 'A login URL for a partner user: single use, valid 10 minutes (scope accounts; the key’s name is recorded)',
      security: opsSecurity,
      requestBody: jsonBody('LoginUrlRequest', 'whose login, and optionally the mobile number the wallet’s login page is pinned to'),
      responses: {
        '201': json('LoginUrl', 'the URL to send the user to'),
        '400': problem('a malformed body; nothing stored', ['VALIDATION_ERROR', ...malformedBodyCodes]),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
  },
  '/ops/links': {
    get: {
      tags: ['links'],
      operationId: 'findLinks',
      summary: 'A user’s links, by partner user id or by wallet profile id (exactly one)',
      security: opsSecurity,
      parameters: queryParameters(linkSearchQuerySchema as unknown as z.ZodObject),
      responses: {
        '200': json('LinkList', 'the links, newest first (at most 100)'),
        '400': problem('neither or both of partnerUserId and profileId', ['VALIDATION_ERROR']),
        ...opsCommon,
      },
    },
  },
  '/ops/links/{linkId}': {
    get: {
      tags: ['links'],
      operationId: 'getLink',
      summary: 'A link: status, kind, scopes and token expiry (never a token)',
      security: opsSecurity,
      parameters: [linkId],
      responses: {
        '200': json('Link', 'the link'),
        '400': problem('not a link id', ['INVALID_LINK_ID']),
        '404': problem('no such link', ['LINK_NOT_FOUND']),
        ...opsCommon,
      },
    },
    delete: {
      tags: ['links'],
      operationId: 'unlink',
      summary: 'Unlink: the tokens are deleted; the link stays, UNLINKED, with its history',
      security: opsSecurity,
      parameters: [linkId],
      responses: {
        '200': json('Link', 'the link, UNLINKED'),
        '400': problem('not a link id', ['INVALID_LINK_ID']),
        '404': problem('no such link', ['LINK_NOT_FOUND']),
        ...opsCommon,
      },
    },
  },
  '/ops/links/{linkId}/profile': {
    get: {
      tags: ['links'],
      operationId: 'getLinkProfile',
      summary: 'The user’s wallet profile by scope, fetched and decrypted on every request (never stored or cached)',
      security: opsSecurity,
      parameters: [linkId],
      responses: {
        '200': json('LinkProfile', 'the profile (`Cache-Control: no-store`)'),
        '400': problem('not a link id', ['INVALID_LINK_ID']),
        '404': problem('no such link, or it has no tokens', ['LINK_NOT_FOUND']),
        '409': problem('the link was unlinked, or the user must log in again', ['LINK_UNLINKED', 'REAUTH_REQUIRED']),
        '501': problem('profile reads are not configured', ['NOT_CONFIGURED']),
        '502': problem('the wallet service did not give the profile', ['WALLET_UNAVAILABLE']),
        ...opsCommon,
        '503': problem(
          'the user’s tokens could not be refreshed just now (the link stays usable), or too many requests at once (OVERLOADED, with Retry-After); try again',
          ['TOKEN_REFRESH_FAILED', 'OVERLOADED'],
        ),
      },
    },
  },
};

const webhookEndpointId = parameter('path', 'endpointId', webhookEndpointIdSchema, 'the endpoint’s id');
const webhookDeliveryId = parameter('path', 'deliveryId', webhookDeliveryIdSchema, 'the delivery’s id');

const opsWebhooks = {
  '/ops/webhooks/endpoints': {
    post: {
      tags: ['webhooks'],
      operationId: 'createWebhookEndpoint',
      summary:
        'Register an endpoint for some events (scope admin). Each event is POSTed as a `WebhookEvent` body signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` under the secret), retried with backoff for at least 24 hours; receivers dedupe on `webhook-id`',
      security: opsSecurity,
      requestBody: jsonBody('CreateWebhookEndpoint', 'the URL (http or https) and the events it receives'),
      responses: {
        '201': json('WebhookEndpointCreated', 'the endpoint and its secret (`whsec_…`): shown this once, stored encrypted'),
        '400': problem('a malformed body; nothing stored', ['VALIDATION_ERROR', ...malformedBodyCodes]),
        '422': problem('in production: not an https URL, or one inside walletflow’s own network (loopback, private, link-local, a single-label host); nothing stored', ['WEBHOOK_URL_NOT_ALLOWED']),
        ...unreadableJsonBody,
        ...opsCommon,
      },
    },
  },
  '/ops/webhooks/endpoints/{endpointId}': {
    get: {
      tags: ['webhooks'],
      operationId: 'getWebhookEndpoint',
      summary: 'An endpoint (never its secret)',
      security: opsSecurity,
      parameters: [webhookEndpointId],
      responses: { '200': json('WebhookEndpoint', 'the endpoint'), '404': problem('no such endpoint, or deleted', ['WEBHOOK_ENDPOINT_NOT_FOUND']), ...opsCommon },
    },
    delete: {
      tags: ['webhooks'],
      operationId: 'deleteWebhookEndpoint',
      summary: 'Delete an endpoint (scope admin): no new deliveries, its pending ones end FAILED; its deliveries stay listed',
      security: opsSecurity,
      parameters: [webhookEndpointId],
      responses: { '204': { description: 'deleted' }, '404': problem('no such endpoint, or deleted', ['WEBHOOK_ENDPOINT_NOT_FOUND']), ...opsCommon },
    },
  },
  '/ops/webhooks/deliveries': {
    get: {
      tags: ['webhooks'],
      operationId: 'listWebhookDeliveries',
      summary: 'Deliveries, newest first, a page at a time, each with its attempt log (status code or error, and when)',
      security: opsSecurity,
      parameters: queryParameters(webhookDeliveryListQuerySchema, { ...listFilters, endpointId: 'only this endpoint’s deliveries' }),
      responses: {
        '200': json('WebhookDeliveryPage', 'a page'),
        '400': problem('a bad filter, or a cursor this API did not give', ['VALIDATION_ERROR', 'INVALID_CURSOR']),
        ...opsCommon,
      },
    },
  },
  '/ops/webhooks/deliveries/{deliveryId}/redeliver': {
    post: {
      tags: ['webhooks'],
      operationId: 'redeliverWebhook',
      summary: 'Send a FAILED (dead-lettered) or delivered delivery again, now, with a new retry window (scope admin); the same `webhook-id`',
      security: opsSecurity,
      parameters: [webhookDeliveryId],
      responses: {
        '202': json('WebhookDelivery', 'due again'),
        '404': problem('no such delivery', ['WEBHOOK_DELIVERY_NOT_FOUND']),
        '409': problem('still being attempted, or its endpoint was deleted', ['WEBHOOK_DELIVERY_PENDING', 'WEBHOOK_ENDPOINT_DELETED']),
        ...opsCommon,
      },
    },
  },
};

function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof version === 'string' ? version : '0.0.0';
}

/** The whole document; build it once (api/docs.ts does). */
export function buildOpenApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'walletflow',
      version: packageVersion(),
      summary: 'The partner side of a wallet operator’s partner interface',
      description: [
        'Fundings and merchant payments (the ops API, `/ops/…`), the session URL the wallet service calls,',
        'the landing page in the wallet app’s web view (`/app…`), the standalone login (`/connect/…`), health',
        'and metrics. Paths and shapes follow contract-decisions section 8.',
        '',
        'Ops API errors are RFC 9457 problem details (`application/problem+json`) with a `code` member to',
        'branch on; an unknown path answers 404 `NOT_FOUND`. Amounts are decimal strings. The session URL',
        'and the landing page’s JSON polls answer `{ code, message }`; the pages answer HTML.',
      ].join('\n'),
    },
    tags: [
      { name: 'health', description: 'liveness, readiness, metrics' },
      { name: 'fundings', description: 'ops API: fund a wallet exactly once' },
      { name: 'payments', description: 'ops API: merchant payments; NEEDS_REVIEW when an outcome stays unknown' },
      { name: 'links', description: 'ops API: the users’ wallet links' },
      { name: 'ledger', description: 'ops API: the partner’s ledger (accounts, adjustments, entries, settlement)' },
      { name: 'webhooks', description: 'ops API: signed webhooks to the partner’s systems (Standard Webhooks), their deliveries and redelivery' },
      { name: 'embedded', description: 'the session URL the wallet service calls' },
      { name: 'landing', description: 'the landing page and its forms (HTML for people; cookie session)' },
      { name: 'connect', description: 'the standalone login through the connect service' },
      { name: 'docs', description: 'this documentation' },
    ],
    paths: { ...health, ...opsFundings, ...opsPayments, ...opsLinks, ...opsLedger, ...opsWebhooks, ...embedded, ...landing, ...connect, ...docs },
    components: {
      schemas: { ...componentSchemas(requestSchemas, 'input'), ...componentSchemas(responseSchemas, 'output') },
      securitySchemes: {
        opsApiKey: { type: 'http', scheme: 'bearer', description: 'one of OPS_API_KEYS; failed attempts are limited per address' },
        appSession: { type: 'apiKey', in: 'cookie', name: APP_COOKIE, description: 'the landing page’s web session (set by GET /app?sessionId=…)' },
      },
    },
  };
}
