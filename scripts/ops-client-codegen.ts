// Turns the OpenAPI 3.1 document (api/docs/openapi.ts) into client/ops-client.generated.ts: a
// TypeScript type per component schema the ops API uses, one typed method per `/ops` operation and
// a small fetch-based runtime. A pure function of the document, so a unit test can regenerate in
// memory and compare with the checked-in file. Knows the JSON Schema subset z.toJSONSchema writes.

type Schema = Record<string, unknown>;

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header' | 'cookie';
  required?: boolean;
  description?: string;
  schema: Schema;
}

interface Operation {
  operationId: string;
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema }> };
  responses: Record<string, { description?: string; content?: Record<string, { schema: Schema }> }>;
}

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const COMPONENTS = '#/components/schemas/';
const methods = ['get', 'post', 'put', 'patch', 'delete'] as const;

const refName = (ref: string): string => {
  if (!ref.startsWith(COMPONENTS)) throw new Error(`unsupported $ref ${ref}`);
  return ref.slice(COMPONENTS.length);
};

const identifier = /^[A-Za-z_$][\w$]*$/;
const propertyKey = (name: string) => (identifier.test(name) ? name : JSON.stringify(name));
const indent = (text: string, by: string) => text.replace(/\n/g, `\n${by}`);

/** A JSDoc line or block; `*\/` cannot end it early. */
function docComment(text: string | undefined, pad: string): string {
  if (!text) return '';
  const lines = text.replace(/\*\//g, '*\\/').split('\n');
  return lines.length === 1
    ? `${pad}/** ${lines[0]} */\n`
    : `${pad}/**\n${lines.map((line) => `${pad} * ${line}`.trimEnd()).join('\n')}\n${pad} */\n`;
}

/** The TypeScript type of one schema (inline); components are named by their `$ref`. */
export function typeOf(schema: Schema, refs: Set<string> = new Set()): string {
  if (typeof schema.$ref === 'string') {
    const name = refName(schema.$ref);
    refs.add(name);
    return name;
  }
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((value) => JSON.stringify(value)).join(' | ');
  const union = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (Array.isArray(union)) return union.map((member) => wrap(typeOf(member, refs))).join(' | ');
  if (Array.isArray(schema.allOf))
    return (schema.allOf as Schema[]).map((member) => wrap(typeOf(member, refs))).join(' & ');
  if (Array.isArray(schema.type))
    return (schema.type as string[]).map((type) => wrap(typeOf({ ...schema, type }, refs))).join(' | ');
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `${wrap(schema.items ? typeOf(schema.items as Schema, refs) : 'unknown')}[]`;
    case 'object':
      return objectType(schema, refs);
    case undefined:
      return 'unknown';
    default:
      throw new Error(`unsupported schema type ${JSON.stringify(schema.type)}`);
  }
}

/** Parenthesises a union or intersection where it is an element of another type. */
const wrap = (type: string) => (/[|&]/.test(type) && !/^\{[\s\S]*\}$/.test(type) ? `(${type})` : type);

function objectType(schema: Schema, refs: Set<string>): string {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const required = new Set((schema.required ?? []) as string[]);
  const lines = Object.entries(properties).map(
    ([name, property]) =>
      `${docComment(property.description as string | undefined, '  ')}  ${propertyKey(name)}${required.has(name) ? '' : '?'}: ${indent(typeOf(property, refs), '  ')};`,
  );
  const extra = schema.additionalProperties;
  if (extra !== undefined && extra !== false)
    lines.push(`  [key: string]: ${extra === true ? 'unknown' : typeOf(extra as Schema, refs)};`);
  if (lines.length === 0) return 'Record<string, unknown>';
  return `{\n${lines.join('\n')}\n}`;
}

/** `Idempotency-Key` → `idempotencyKey`, `X-Ops-Actor` → `opsActor`. */
export function headerParameterName(header: string): string {
  const words = header.replace(/^X-/i, '').split('-').filter(Boolean);
  return words
    .map((word, index) => (index === 0 ? word.toLowerCase() : word[0]!.toUpperCase() + word.slice(1).toLowerCase()))
    .join('');
}

interface OperationPlan {
  id: string;
  method: string;
  path: string;
  summary: string | undefined;
  paramsType: string;
  paramsRequired: boolean;
  answerType: string;
  table: string;
}

function planOperation(path: string, method: string, operation: Operation, refs: Set<string>): OperationPlan {
  const fields: string[] = [];
  const names = new Set<string>();
  let anyRequired = false;
  const add = (name: string, required: boolean, type: string, description: string | undefined) => {
    if (names.has(name)) throw new Error(`${operation.operationId}: two parameters named ${name}`);
    names.add(name);
    anyRequired ||= required;
    fields.push(`${docComment(description, '  ')}  ${propertyKey(name)}${required ? '' : '?'}: ${indent(type, '  ')};`);
  };
  const pathParams: string[] = [];
  const query: string[] = [];
  const headers: Record<string, string> = {};
  for (const parameter of operation.parameters ?? []) {
    const type = typeOf(parameter.schema, refs);
    if (parameter.in === 'path') {
      pathParams.push(parameter.name);
      add(parameter.name, true, type, parameter.description);
    } else if (parameter.in === 'query') {
      query.push(parameter.name);
      add(parameter.name, parameter.required === true, type, parameter.description);
    } else if (parameter.in === 'header') {
      const name = headerParameterName(parameter.name);
      headers[name] = parameter.name;
      add(name, parameter.required === true, type, parameter.description);
    } else {
      throw new Error(`${operation.operationId}: ${parameter.in} parameters are not supported`);
    }
  }
  const body = operation.requestBody?.content['application/json'];
  if (operation.requestBody && !body)
    throw new Error(`${operation.operationId}: only JSON request bodies are supported`);
  if (body) add('body', operation.requestBody?.required === true, typeOf(body.schema, refs), undefined);

  const answers = Object.entries(operation.responses)
    .filter(([status]) => /^2\d\d$/.test(status))
    .map(([status, response]) => {
      const types = Object.entries(response.content ?? {}).map(([mediaType, { schema }]) =>
        /json/.test(mediaType) ? typeOf(schema, refs) : 'string',
      );
      const bodyType = types.length === 0 ? 'undefined' : [...new Set(types)].join(' | ');
      return `{ status: ${status}; body: ${bodyType} }`;
    });
  if (answers.length === 0) throw new Error(`${operation.operationId}: no 2xx response`);

  const table = [
    `method: '${method.toUpperCase()}'`,
    `path: ${JSON.stringify(path)}`,
    `pathParams: ${JSON.stringify(pathParams)}`,
    `query: ${JSON.stringify(query)}`,
    `headers: ${JSON.stringify(headers)}`,
    `body: ${body ? 'true' : 'false'}`,
  ].join(', ');
  return {
    id: operation.operationId,
    method: method.toUpperCase(),
    path,
    summary: operation.summary,
    paramsType: fields.length === 0 ? 'Record<string, never>' : `{\n${fields.join('\n')}\n}`,
    paramsRequired: anyRequired,
    answerType: answers.join(' | '),
    table,
  };
}

const pascal = (id: string) => id[0]!.toUpperCase() + id.slice(1);

/** Every component `names` reach through `$ref`s, in the document's order. */
function closure(document: Document, names: Set<string>): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    const schema = document.components.schemas[name];
    if (!schema) throw new Error(`$ref to a missing component ${name}`);
    seen.add(name);
    const refs = new Set<string>();
    typeOf(schema, refs);
    for (const ref of refs) visit(ref);
  };
  for (const name of names) visit(name);
  return Object.keys(document.components.schemas).filter((name) => seen.has(name));
}

/** The whole generated module for the operations under `/ops`. */
export function generateOpsClient(input: unknown): string {
  const document = input as Document;
  const refs = new Set<string>(['Problem']);
  const plans: OperationPlan[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    if (!path.startsWith('/ops/') && path !== '/ops') continue;
    for (const method of methods) {
      const operation = item[method];
      if (operation) plans.push(planOperation(path, method, operation, refs));
    }
  }

  const components = closure(document, refs).map((name) => {
    const schema = document.components.schemas[name]!;
    const type = typeOf(schema);
    const declaration = type.startsWith('{') ? `export interface ${name} ${type}` : `export type ${name} = ${type};`;
    return `${docComment(schema.description as string | undefined, '')}${declaration}`;
  });

  const paramTypes = plans.map((plan) => `export type ${pascal(plan.id)}Params = ${plan.paramsType};`);
  const answerTypes = plans.map((plan) => `export type ${pascal(plan.id)}Answer = ${plan.answerType};`);
  const clientMethods = plans.map(
    (plan) =>
      `${docComment(`${plan.method} ${plan.path}${plan.summary ? `: ${plan.summary}` : ''}`, '  ')}  ${plan.id}(params${plan.paramsRequired ? '' : '?'}: ${pascal(plan.id)}Params, options?: CallOptions): Promise<${pascal(plan.id)}Answer>;`,
  );
  const table = plans.map((plan) => `  ${plan.id}: { ${plan.table} },`);

  return [
    header,
    '// ---- schemas (components/schemas) ------------------------------------------------------------',
    '',
    components.join('\n\n'),
    '',
    '// ---- operations: parameters (path, query, headers, body) and answers (2xx) --------------------',
    '',
    paramTypes.join('\n\n'),
    '',
    answerTypes.join('\n'),
    '',
    'export interface OpsClient {',
    clientMethods.join('\n'),
    '}',
    '',
    'const operations: Record<keyof OpsClient, OperationSpec> = {',
    table.join('\n'),
    '};',
    runtime,
  ].join('\n');
}

const header = `// The typed client of walletflow's ops API, generated from its OpenAPI document
// (/docs/openapi.json) by scripts/generate-ops-client.ts: do not edit by hand; run
// \`npm run client:generate\` after changing the API (a unit test fails until you do).
// Self-contained (Node 20's or a browser's fetch, no imports), so partners may copy this file.
// Errors: a non-2xx answer throws OpsProblemError (RFC 9457 problem details with \`code\`); no
// answer at all, or an answer that broke off, throws OpsNetworkError. Neither ever carries the API key.
`;

const runtime = `
// ---- runtime ---------------------------------------------------------------------------------

interface OperationSpec {
  method: string;
  path: string;
  pathParams: string[];
  query: string[];
  headers: Record<string, string>;
  body: boolean;
}

export interface OpsClientOptions {
  /** The API's base URL, e.g. http://127.0.0.1:3000 (no trailing /ops). */
  baseUrl: string;
  /** One of the API's OPS_API_KEYS; sent as \`Authorization: Bearer …\`, never in an error. */
  key: string;
  /**
   * How long to wait for the answer's headers, and then for each part of its body, in milliseconds (default 15 000): a
   * long report that keeps coming is read whole, one that stalls is not.
   */
  timeoutMs?: number;
  /** Another fetch (tests, proxies); default the global one. */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /**
   * The caller's abort: before the answer's headers, the call rejects with its reason, as fetch does; while a 2xx
   * answer's body is read, with OpsNetworkError (\`brokenOff\`, reason "stopped by the caller"), which keeps a write's
   * Idempotency-Key; an error status stands.
   */
  signal?: AbortSignal;
  /** Extra headers for this call (e.g. X-Request-Id). */
  headers?: Record<string, string>;
}

/** The API answered with an error status: its problem document, when it sent one. */
export class OpsProblemError extends Error {
  readonly code: string;
  readonly detail: string;
  constructor(
    readonly status: number,
    readonly problem: Problem | undefined,
    readonly operation: string,
    readonly method = 'GET',
    readonly idempotencyKey?: string,
  ) {
    const code = problem?.code ?? \`HTTP_\${status}\`;
    const detail = problem ? (problem.detail ?? problem.title) : 'the answer is not a problem document: is this walletflow’s API?';
    super(\`\${operation}: \${status} \${code}: \${detail}\`);
    this.name = 'OpsProblemError';
    this.code = code;
    this.detail = detail;
  }
  /** Worth another try later: the server or something in between failed, or a rate limit. */
  get transient(): boolean {
    return this.status >= 500 || this.status === 429;
  }
}

/**
 * No answer (nothing listens at the URL, DNS failed, the connection broke or timed out), or
 * \`brokenOff\`: a 2xx answer that broke off or timed out while its body was read, or whose JSON
 * is not whole. Nothing of such an answer is returned: half a report never passes for a whole one.
 * A write answered so (\`method\` other than GET) was applied: only its answer was lost; sent again
 * with the same \`idempotencyKey\`, it is answered again, applied once.
 */
export class OpsNetworkError extends Error {
  constructor(
    readonly baseUrl: string,
    readonly reason: string,
    readonly brokenOff = false,
    readonly method = 'GET',
    readonly idempotencyKey?: string,
  ) {
    super(brokenOff ? \`the ops API's answer from \${baseUrl} broke off (\${reason})\` : \`the ops API is not reachable at \${baseUrl} (\${reason})\`);
    this.name = 'OpsNetworkError';
  }
}

function networkReason(error: unknown): string | null {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'no answer in time';
  if (!(error instanceof TypeError)) return null;
  const cause = (error as TypeError & { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  return typeof cause?.message === 'string' ? cause.message : error.message;
}

/** An abort after \`ms\` of silence: restarted each time a part of the answer arrives. */
function idleTimeout(ms: number): { signal: AbortSignal; restart(): void; clear(): void } {
  const controller = new AbortController();
  const fire = () => controller.abort(new DOMException('no answer in time', 'TimeoutError'));
  let timer = setTimeout(fire, ms);
  return {
    signal: controller.signal,
    restart() {
      clearTimeout(timer);
      timer = setTimeout(fire, ms);
    },
    clear: () => clearTimeout(timer),
  };
}

/** The body as text, each part that arrives restarting \`idle\`. */
async function readText(response: Response, idle: { restart(): void }): Promise<string> {
  if (!response.body) return '';
  const decoder = new TextDecoder();
  let text = '';
  const reader = response.body.getReader();
  for (;;) {
    const part = await reader.read();
    if (part.done) break;
    idle.restart();
    text += decoder.decode(part.value, { stream: true });
  }
  return text + decoder.decode();
}

function isProblem(value: unknown): value is Problem {
  return typeof value === 'object' && value !== null && typeof (value as { code?: unknown }).code === 'string' && typeof (value as { title?: unknown }).title === 'string';
}

async function call(options: OpsClientOptions, id: string, spec: OperationSpec, params: Record<string, unknown>, callOptions: CallOptions): Promise<{ status: number; body: unknown }> {
  const baseUrl = options.baseUrl.replace(/\\/+$/, '');
  let path = spec.path;
  for (const name of spec.pathParams) path = path.replace(\`{\${name}}\`, encodeURIComponent(String(params[name])));
  const query = new URLSearchParams();
  for (const name of spec.query) if (params[name] !== undefined) query.set(name, String(params[name]));
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json, text/csv', authorization: \`Bearer \${options.key}\`, ...callOptions.headers };
  for (const [name, header] of Object.entries(spec.headers)) if (params[name] !== undefined) headers[header] = String(params[name]);
  if (spec.body && params.body !== undefined) headers['content-type'] = 'application/json';
  const idle = idleTimeout(options.timeoutMs ?? 15_000);
  const signal = callOptions.signal ? AbortSignal.any([idle.signal, callOptions.signal]) : idle.signal;
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(\`\${baseUrl}\${path}\${query.size > 0 ? \`?\${query.toString()}\` : ''}\`, {
      method: spec.method,
      headers,
      ...(spec.body && params.body !== undefined ? { body: JSON.stringify(params.body) } : {}),
      signal,
    });
  } catch (error) {
    idle.clear();
    // The caller's own abort is theirs to read, never "no answer in time".
    if (callOptions.signal?.aborted) throw callOptions.signal.reason;
    const reason = networkReason(error);
    if (reason !== null) throw new OpsNetworkError(baseUrl, reason, false, spec.method, headers['Idempotency-Key']);
    throw error;
  }
  const ok = response.status >= 200 && response.status <= 299;
  let text = '';
  try {
    idle.restart();
    text = await readText(response, idle);
  } catch (error) {
    // An error status stands without its body; a 2xx without its whole body is no answer (a write's: applied, its key
    // answers it again), the caller's own stop as well.
    if (ok && callOptions.signal?.aborted)
      throw new OpsNetworkError(baseUrl, 'stopped by the caller', true, spec.method, headers['Idempotency-Key']);
    if (ok) throw new OpsNetworkError(baseUrl, networkReason(error) ?? (error as Error).message, true, spec.method, headers['Idempotency-Key']);
  } finally {
    idle.clear();
  }
  const json = /json/.test(response.headers.get('content-type') ?? '');
  let body: unknown = text === '' ? undefined : text;
  if (json && text !== '') {
    try {
      body = JSON.parse(text);
    } catch {
      if (ok) throw new OpsNetworkError(baseUrl, 'its JSON is not whole', true, spec.method, headers['Idempotency-Key']);
      body = undefined;
    }
  }
  if (!ok) throw new OpsProblemError(response.status, isProblem(body) ? body : undefined, id, spec.method, headers['Idempotency-Key']);
  return { status: response.status, body };
}

/** The client: one method per operation, each resolving to \`{ status, body }\` on a 2xx. */
export function createOpsClient(options: OpsClientOptions): OpsClient {
  const client: Record<string, (params?: Record<string, unknown>, callOptions?: CallOptions) => Promise<{ status: number; body: unknown }>> = {};
  for (const [id, spec] of Object.entries(operations)) {
    client[id] = (params = {}, callOptions = {}) => call(options, id, spec, params, callOptions);
  }
  return client as unknown as OpsClient;
}
`;
