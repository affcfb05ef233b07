// Cursor pagination for lists ordered newest first: the last item's createdAt and id, opaque to
// clients (base64url JSON).
import { z } from 'zod';

export function encodeCursor(createdAt: Date, id: string): string {
  return Buffer.from(JSON.stringify([createdAt.toISOString(), id])).toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: Date; id: string } | null {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    const createdAt = new Date(at);
    if (Number.isNaN(createdAt.getTime()) || !z.uuid().safeParse(id).success) return null;
    return { createdAt, id };
  } catch {
    return null;
  }
}
