// `npm run client:generate`: writes client/ops-client.generated.ts from the OpenAPI document the
// API serves (api/docs/openapi.ts). `--check` writes nothing and exits 1 when the file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { buildOpenApiDocument } from '../api/docs/openapi.ts';
import { generateOpsClient } from './ops-client-codegen.ts';

export const generatedClientPath = path.resolve(import.meta.dirname, '../client/ops-client.generated.ts');

const text = generateOpsClient(buildOpenApiDocument());
if (process.argv.includes('--check')) {
  const current = readFileSync(generatedClientPath, 'utf8');
  if (current !== text) {
    process.stderr.write(
      `${path.relative(process.cwd(), generatedClientPath)} is stale: run npm run client:generate\n`,
    );
    process.exit(1);
  }
} else {
  writeFileSync(generatedClientPath, text);
  process.stdout.write(`wrote ${path.relative(process.cwd(), generatedClientPath)}\n`);
}
