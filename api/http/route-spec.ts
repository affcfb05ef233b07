// A route, declared once next to its handler: its method and path, who may call it (the ops API's
// scope, the landing page's web session, or anyone) and what the OpenAPI document says of it
// (operationId, summary, parameters, body, answers), with the zod schemas the handler validates
// with and builds its answers from. The handler is registered from the same declaration
// (route-registration.ts) with its scope check first, and
// api/docs/openapi.ts builds the document from every area's declarations: a path, a method or a
// scope cannot differ between the code and the document.
import type { z } from 'zod';
import type { OpsScope } from '../../lib/ops-keys.ts';
import { problemSchema } from './problem.ts';

/** A JSON Schema written out (an HTML page, CSV text): anything that is not a zod schema. */
export type JsonSchema = Record<string, unknown>;

export type HttpMethod = 'get' | 'head' | 'post' | 'put' | 'patch' | 'delete';

/**
 * A zod schema the document names once, as `#/components/schemas/{component}`, and refers to by
 * `$ref` wherever a body or an answer holds it.
 */
export interface NamedSchema {
  readonly component: string;
  readonly schema: z.ZodType;
}

export const named = (component: string, schema: z.ZodType): NamedSchema => ({ component, schema });

/** What a body or an answer of one media type holds. */
export type ContentSchema = NamedSchema | { readonly jsonSchema: JsonSchema };

export interface HeaderSpec {
  readonly description: string;
  readonly schema: JsonSchema;
}

export interface AnswerSpec {
  readonly description: string;
  readonly headers?: Readonly<Record<string, HeaderSpec>>;
  /** By media type; absent: an answer without a body. */
  readonly content?: Readonly<Record<string, ContentSchema>>;
}

/** A path or header parameter: the schema its handler reads it with (documented as clients send it). */
export interface ParameterSpec {
  readonly schema: z.ZodType;
  readonly description: string;
}

/**
 * Who may call a route: anyone; the ops API with a bearer key (OPS_API_KEYS) that has this scope;
 * the landing page's web session cookie (`optional`: the route answers without one too); or a
 * person signed in to the ops console with this scope (null: any person signed in).
 */
export type RouteAccess =
  | 'public'
  | { readonly opsScope: OpsScope }
  | { readonly webSession: 'required' | 'optional' }
  | { readonly consoleScope: OpsScope | null };

/** The `{name}` parameters of a path template. */
export type PathParameterName<Path extends string> = Path extends `${string}{${infer Name}}${infer Rest}`
  ? Name | PathParameterName<Rest>
  : never;

interface RouteFields {
  readonly method: HttpMethod;
  /** Unique in the document; the generated ops client's method name. */
  readonly operationId: string;
  /** The document's tag (its group of operations). */
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  readonly access: RouteAccess;
  /** The query: each field of the object is one parameter (`style: form`, OpenAPI's default). */
  readonly query?: { readonly schema: z.ZodType; readonly descriptions?: Readonly<Record<string, string>> };
  /** Request headers the route reads, by name. */
  readonly headers?: Readonly<Record<string, ParameterSpec & { readonly required: boolean }>>;
  /** The request body: always required; named, so the document shows it once. */
  readonly body?: {
    readonly mediaType: 'application/json' | 'application/x-www-form-urlencoded';
    readonly schema: NamedSchema;
    readonly description?: string;
    /** Other media types the route also reads (a funding batch's CSV file). */
    readonly alternatives?: Readonly<Record<'text/csv', ContentSchema>>;
  };
  /**
   * The route's own answers, by status. The answers every route of its kind may give (an ops
   * route's authentication, for one) are added by the document's builder (api/docs/openapi.ts).
   */
  readonly responses: Readonly<Record<`${number}`, AnswerSpec>>;
}

/**
 * A route whose path is `Path`, as OpenAPI writes it (`/ops/fundings/{fundingId}`) from the app's
 * root: every `{name}` of it has its parameter declared, and no other.
 */
export type RouteSpec<Path extends string = string> = RouteFields & { readonly path: Path } & PathParameters<Path>;

type PathParameters<Path extends string> = [PathParameterName<Path>] extends [never]
  ? { readonly params?: undefined }
  : { readonly params: Readonly<Record<PathParameterName<Path>, ParameterSpec>> };

/** Any route, whatever its path (lists of routes, the document's builder). */
export type AnyRouteSpec = RouteFields & {
  readonly path: string;
  readonly params?: Readonly<Record<string, ParameterSpec>>;
};

/** Declares a route; its path's parameters are checked against `params` as it is written. */
export const defineRoute = <Path extends string>(spec: RouteSpec<Path>): RouteSpec<Path> => spec;

// ---- answers, as the routes declare them ----------------------------------------------------

export const textSchema: JsonSchema = { type: 'string' };

export const header = (description: string, schema: JsonSchema = textSchema): HeaderSpec => ({ description, schema });
export const retryAfterHeader = header('seconds to wait before retrying', { type: 'integer', minimum: 1 });

/**
 * The answer of a HEAD whose GET spends something single-use or calls the wallet: a link preview, a scanner or a
 * monitor gets 405 and nothing is spent or called (Express would otherwise let the GET answer the HEAD).
 */
export const headRefusedAnswers = (why: string): Readonly<Record<'405', AnswerSpec>> => ({
  '405': { description: why, headers: { Allow: header('`GET`') } },
});

const withHeaders = (headers: Record<string, HeaderSpec> | undefined) => (headers ? { headers } : {});

/** A JSON answer of a named schema. */
export const jsonAnswer = (
  schema: NamedSchema,
  description: string,
  headers?: Record<string, HeaderSpec>,
): AnswerSpec => ({
  description,
  ...withHeaders(headers),
  content: { 'application/json': schema },
});

export const problemComponent = named('Problem', problemSchema);

/** A problem document (api/http/problem.ts); `codes` are the values of its `code` member for this status. */
export const problemAnswer = (
  description: string,
  codes: readonly string[],
  headers?: Record<string, HeaderSpec>,
): AnswerSpec => ({
  description: `${description} (\`code\`: ${codes.map((code) => `\`${code}\``).join(', ')})`,
  ...withHeaders(headers),
  content: { 'application/problem+json': problemComponent },
});

/** A page for people. */
export const htmlAnswer = (description: string, headers?: Record<string, HeaderSpec>): AnswerSpec => ({
  description,
  ...withHeaders(headers),
  content: { 'text/html': { jsonSchema: textSchema } },
});

export const redirectAnswer = (description: string): AnswerSpec => ({
  description,
  headers: { Location: header('where to go next') },
});
