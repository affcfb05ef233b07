// Every Temporal walletflow starts runs with the same dynamic configuration: the dev server (its
// command line), the bench's real server (the file it writes) and docker-compose's server
// (deploy/temporal/dynamicconfig.yaml, mounted). The compose file is read here, as compose reads it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { temporalDynamicConfig } from '../../stack/temporal-dev-server.ts';
import { projectRoot } from '../../lib/project-root.ts';

describe('Temporal dynamic configuration', () => {
  const composeFile = readFileSync(path.join(projectRoot, 'deploy/temporal/dynamicconfig.yaml'), 'utf8');

  it.each(Object.entries(temporalDynamicConfig))('deploy/temporal/dynamicconfig.yaml sets %s to %s', (key, value) => {
    const block = new RegExp(`^${key.replaceAll('.', '\\.')}:\\n\\s+- value: (.+)$`, 'm').exec(composeFile);
    expect(block?.[1]).toBe(JSON.stringify(value));
  });

  it('docker-compose mounts it and points the server at it', () => {
    const compose = readFileSync(path.join(projectRoot, 'docker-compose.yml'), 'utf8');
    expect(compose).toContain(
      './deploy/temporal/dynamicconfig.yaml:/etc/temporal/config/dynamicconfig/walletflow.yaml:ro',
    );
    expect(compose).toContain('DYNAMIC_CONFIG_FILE_PATH: config/dynamicconfig/walletflow.yaml');
  });
});
