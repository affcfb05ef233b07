// What loadConfig refuses in an environment: the ConfigError's problems (a test fails if it accepts it).
import { expect } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.ts';

export function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}
