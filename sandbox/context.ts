// What every sandbox router shares: the registration, the state, the clock and the sandbox's
// internal keys. Built once per sandbox by createSandboxContext.
import { randomBytes, randomInt, type KeyObject } from 'node:crypto';
import { createSandboxClock, type SandboxClock } from './clock.ts';
import { configureFaults, createLateEffects, type FaultContext } from './faults.ts';
import type { PartnerRegistration } from './registration.ts';
import { clearState, createState, defaultSettings, type SandboxSettings, type SandboxState } from './state.ts';

export interface SandboxKeys {
  /** Signs client tokens, embedded refresh tokens and id tokens (HS256). */
  signing: Buffer;
  /** Encrypts embedded user access tokens (dir, A256GCM). */
  encryption: Buffer;
  /** Signs the pre-signed identity document URLs (HMAC-SHA256). */
  documents: Buffer;
}

export interface SandboxContext {
  registration: PartnerRegistration;
  profileEncryptionKey: KeyObject;
  state: SandboxState;
  clock: SandboxClock;
  keys: SandboxKeys;
  initialSettings: SandboxSettings;
  /** Seed of the fault generator when PUT /_sandbox/faults gives none. */
  defaultSeed: number;
  faultContext: FaultContext;
  /** Empties the state and rewinds the clock; the registration stays. */
  reset(): void;
}

export interface ContextOptions {
  registration: PartnerRegistration;
  profileEncryptionKey: KeyObject;
  settings?: Partial<SandboxSettings>;
  seed?: number;
  shutdown: AbortSignal;
}

export function createSandboxContext(options: ContextOptions): SandboxContext {
  const initialSettings: SandboxSettings = { ...defaultSettings, ...options.settings };
  const defaultSeed = options.seed ?? randomInt(2 ** 31);
  const noFaults = () => configureFaults({ rules: [] }, defaultSeed);
  const state = createState(initialSettings, noFaults());
  const clock = createSandboxClock();
  return {
    registration: options.registration,
    profileEncryptionKey: options.profileEncryptionKey,
    state,
    clock,
    keys: { signing: randomBytes(32), encryption: randomBytes(32), documents: randomBytes(32) },
    initialSettings,
    defaultSeed,
    faultContext: {
      faults: () => state.faults,
      shutdown: options.shutdown,
      lateEffects: createLateEffects(options.shutdown),
    },
    reset() {
      clearState(state, initialSettings, noFaults());
      clock.reset();
    },
  };
}
