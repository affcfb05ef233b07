// Header checks shared by the sandbox's services: HTTP Basic and Bearer credentials and the
// Request-Reference-No formats (UUIDv4 at op, up to 50 alphanumerics and hyphens at transfers).
import { timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { serviceError } from './answers.ts';

export interface BasicCredentials {
  user: string;
  password: string;
}

export function basicCredentials(req: Request): BasicCredentials | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.get('authorization') ?? '');
  if (!match?.[1]) return null;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

export function bearerToken(req: Request): string | null {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
  return match?.[1] ?? null;
}

/** Constant-time comparison, so a wrong secret leaks nothing through timing. */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const uuidV4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const transferReference = /^[A-Za-z0-9-]{1,50}$/;

export function isUuidV4(value: string): boolean {
  return uuidV4.test(value);
}

/** The op service's Request-Reference-No: a UUIDv4 (interface), else 400 VALIDATION_ERROR. */
export function opRequestReference(req: Request): string {
  const value = req.get('request-reference-no');
  if (value === undefined || !uuidV4.test(value)) {
    throw serviceError(400, 'VALIDATION_ERROR', 'Request-Reference-No header must be a UUIDv4');
  }
  return value;
}

/** The transfer service's Request-Reference-No: at most 50 alphanumerics and hyphens. */
export function transferRequestReference(req: Request): string {
  const value = req.get('request-reference-no');
  if (value === undefined || !transferReference.test(value)) {
    throw serviceError(
      400,
      'VALIDATION_ERROR',
      'Request-Reference-No header must be 1 to 50 letters, digits or hyphens',
    );
  }
  return value;
}
