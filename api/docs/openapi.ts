// The OpenAPI 3.1 document of walletflow's HTTP surface (contract-decisions section 8), built from
// the routes' own declarations (api/http/route-spec.ts): each area declares its routes next to
// their handlers, with the zod schemas the handlers validate with and build their answers from.
// This builder adds what the routes share (the security schemes, the answers every ops route may
// give) and converts the schemas with z.toJSONSchema, which writes JSON Schema 2020-12, OpenAPI
// 3.1's own dialect (docs/api-docs.md says why). Served by docs-routes.ts at /docs/openapi.json.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { projectRoot } from '../../lib/project-root.ts';
import { connectRoutes } from '../connect/connect-routes.ts';
import { landingRoutes } from '../embedded/landing.ts';
import { sessionUrlRoutes } from '../embedded/session-url.ts';
import { APP_COOKIE } from '../embedded/web-sessions.ts';
import { healthRoutes } from '../http/health.ts';
import { metricsRoutes } from '../http/http-metrics.ts';
import type {
  AnswerSpec,
  AnyRouteSpec,
  ContentSchema,
  JsonSchema,
  NamedSchema,
  RouteAccess,
} from '../http/route-spec.ts';
import { opsCommonAnswers, unreadableJsonBodyAnswers } from '../ops/ops-answers.ts';
import { opsRoutes } from '../ops/ops-routes.ts';
import { webhookEventComponent } from '../ops/webhooks-routes.ts';
import { docsRoutes } from './docs-routes.ts';

/** Every route of the API, in the document's order. */
export const allRoutes: readonly AnyRouteSpec[] = [
  ...healthRoutes,
  ...metricsRoutes,
  ...opsRoutes,
  ...sessionUrlRoutes,
  ...landingRoutes,
  ...connectRoutes,
  ...docsRoutes,
];

/** Schemas the document names that no route holds. */
const unroutedComponents: readonly NamedSchema[] = [webhookEventComponent];

const tags = [
  { name: 'health', description: 'liveness, readiness, metrics' },
  { name: 'fundings', description: 'ops API: fund a wallet exactly once' },
  {
    name: 'batches',
    description:
      'ops API: funding batches — many recipients from one request, held, approved by a second key (contract section 14)',
  },
  { name: 'payments', description: 'ops API: merchant payments; NEEDS_REVIEW when an outcome stays unknown' },
  { name: 'links', description: 'ops API: the users’ wallet links' },
  { name: 'ledger', description: 'ops API: the partner’s ledger (accounts, adjustments, entries, settlement)' },
  {
    name: 'webhooks',
    description:
      'ops API: signed webhooks to the partner’s systems (Standard Webhooks), their deliveries and redelivery',
  },
  { name: 'embedded', description: 'the session URL the wallet service calls' },
  { name: 'landing', description: 'the landing page and its forms (HTML for people; cookie session)' },
  { name: 'connect', description: 'the standalone login through the connect service' },
  { name: 'docs', description: 'this documentation' },
];

const securitySchemes = {
  opsApiKey: {
    type: 'http',
    scheme: 'bearer',
    description: 'one of OPS_API_KEYS; failed attempts are limited per address',
  },
  appSession: {
    type: 'apiKey',
    in: 'cookie',
    name: APP_COOKIE,
    description: 'the landing page’s web session (set by GET /app?sessionId=…)',
  },
};

/** A route's access as OpenAPI security requirements; none for a public route. */
function securityOf(access: RouteAccess): Array<Record<string, string[]>> | undefined {
  if (access === 'public') return undefined;
  // The requirement names the key only; the route's scope, from the same declaration, is enforced
  // by ops-auth.ts, and the 403 every ops route may give says how a key gets it.
  if ('opsScope' in access) return [{ opsApiKey: [] }];
  // The console's pages are not operations of this document.
  if ('consoleScope' in access) return undefined;
  return access.webSession === 'required' ? [{ appSession: [] }] : [{}, { appSession: [] }];
}

/** A route's answers: its own, and those every route of its kind may give (its own win). */
function answersOf(route: AnyRouteSpec): Record<string, AnswerSpec> {
  if (typeof route.access !== 'object' || !('opsScope' in route.access)) return route.responses;
  const jsonBody = route.body?.mediaType === 'application/json';
  return { ...(jsonBody ? unreadableJsonBodyAnswers : {}), ...opsCommonAnswers, ...route.responses };
}

// ---- zod to JSON Schema ------------------------------------------------------------------------

type Io = 'input' | 'output';

const COMPONENTS = '#/components/schemas/';

/**
 * A transform's output has no JSON Schema; the profile's (`value ?? null`) only normalise what
 * they read, so a pipe into a transform is documented by the schema it reads.
 */
const documentTransformsByInput: NonNullable<z.core.ToJSONSchemaParams['override']> = (ctx) => {
  const def = ctx.zodSchema._zod.def;
  if (def.type !== 'pipe' || def.out._zod.def.type !== 'transform') return;
  const { $schema: _dialect, ...input } = z.toJSONSchema(def.in, {
    io: 'output',
    override: documentTransformsByInput,
  }) as JsonSchema;
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

/** One schema of the document, inline (parameters): no `$schema`. */
function schemaOf(schema: z.ZodType, io: Io): JsonSchema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, conversion(io)) as JsonSchema;
  return json;
}

/**
 * The named schemas of one side, each once; one refers to another (a page to its items) by `$ref`.
 * Requests are converted as clients write them (zod's input side: defaults optional, coercions as
 * sent), answers as the routes build them (the output side).
 */
function componentSchemas(schemas: ReadonlyMap<string, z.ZodType>, io: Io): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of schemas) registry.add(schema, { id });
  const { schemas: converted } = z.toJSONSchema(registry, { ...conversion(io), uri: (id) => `${COMPONENTS}${id}` });
  return Object.fromEntries(
    Object.entries(converted).map(([id, json]) => {
      const { $schema: _dialect, $id: _id, ...rest } = json as JsonSchema;
      return [id, rest];
    }),
  );
}

/** The named schemas the document holds, by side, each name once, in the order the routes first use them. */
class Components {
  readonly input = new Map<string, z.ZodType>();
  readonly output = new Map<string, z.ZodType>();

  /** `$ref` to `named`, remembering it; one name is one schema on one side. */
  ref(named: NamedSchema, io: Io): JsonSchema {
    const here = this[io];
    const other = this[io === 'input' ? 'output' : 'input'];
    const known = here.get(named.component);
    if ((known && known !== named.schema) || other.has(named.component))
      throw new Error(`two schemas are named ${named.component}`);
    here.set(named.component, named.schema);
    return { $ref: `${COMPONENTS}${named.component}` };
  }

  content(content: Readonly<Record<string, ContentSchema>>, io: Io): Record<string, { schema: JsonSchema }> {
    return Object.fromEntries(
      Object.entries(content).map(([mediaType, schema]) => [
        mediaType,
        { schema: 'component' in schema ? this.ref(schema, io) : schema.jsonSchema },
      ]),
    );
  }

  schemas(): Record<string, JsonSchema> {
    return { ...componentSchemas(this.input, 'input'), ...componentSchemas(this.output, 'output') };
  }
}

// ---- operations ----------------------------------------------------------------------------------

const parameter = (
  location: 'path' | 'header',
  name: string,
  schema: z.ZodType,
  description: string,
  required: boolean,
) => ({
  name,
  in: location,
  required,
  description,
  schema: schemaOf(schema, 'input'),
});

/** A query schema's fields, one parameter each (`style: form`, OpenAPI's default for the query). */
function queryParameters(route: AnyRouteSpec) {
  if (!route.query) return [];
  const json = schemaOf(route.query.schema, 'input') as {
    type?: unknown;
    properties?: Record<string, JsonSchema>;
    required?: string[];
  };
  if (json.type !== 'object') throw new Error(`route ${route.operationId}: its query schema is not an object`);
  const descriptions = route.query.descriptions ?? {};
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: 'query',
    required: json.required?.includes(name) ?? false,
    ...(descriptions[name] ? { description: descriptions[name] } : {}),
    schema: property,
  }));
}

/** Path parameters, then the query, then headers. */
function parametersOf(route: AnyRouteSpec) {
  return [
    ...Object.entries(route.params ?? {}).map(([name, spec]) =>
      parameter('path', name, spec.schema, spec.description, true),
    ),
    ...queryParameters(route),
    ...Object.entries(route.headers ?? {}).map(([name, spec]) =>
      parameter('header', name, spec.schema, spec.description, spec.required),
    ),
  ];
}

function operationOf(route: AnyRouteSpec, components: Components): Record<string, unknown> {
  if (!tags.some((tag) => tag.name === route.tag))
    throw new Error(`route ${route.operationId}: no tag ${route.tag} in the document`);
  const security = securityOf(route.access);
  const parameters = parametersOf(route);
  const body = route.body;
  const responses = Object.fromEntries(
    Object.entries(answersOf(route)).map(([status, answer]) => [
      status,
      {
        description: answer.description,
        ...(answer.headers ? { headers: answer.headers } : {}),
        ...(answer.content ? { content: components.content(answer.content, 'output') } : {}),
      },
    ]),
  );
  return {
    tags: [route.tag],
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    ...(security ? { security } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(body
      ? {
          requestBody: {
            required: true,
            ...(body.description ? { description: body.description } : {}),
            content: components.content({ [body.mediaType]: body.schema, ...body.alternatives }, 'input'),
          },
        }
      : {}),
    responses,
  };
}

/** The paths of `routes`, each operation once. */
function pathsOf(routes: readonly AnyRouteSpec[], components: Components): Record<string, Record<string, unknown>> {
  const paths: Record<string, Record<string, unknown>> = {};
  const operationIds = new Set<string>();
  for (const route of routes) {
    const item = (paths[route.path] ??= {});
    if (item[route.method] !== undefined)
      throw new Error(`${route.method.toUpperCase()} ${route.path} is declared twice`);
    if (operationIds.has(route.operationId)) throw new Error(`operationId ${route.operationId} is declared twice`);
    operationIds.add(route.operationId);
    item[route.method] = operationOf(route, components);
  }
  return paths;
}

function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version?: unknown };
  return typeof version === 'string' ? version : '0.0.0';
}

/** The whole document; build it once (app.ts does, for docs-routes.ts). */
export function buildOpenApiDocument(): Record<string, unknown> {
  const components = new Components();
  const paths = pathsOf(allRoutes, components);
  for (const named of unroutedComponents) components.ref(named, 'output');
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
    tags,
    paths,
    components: { schemas: components.schemas(), securitySchemes },
  };
}
