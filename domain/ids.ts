// walletflow's ids (fundings, payments, links, batches: UUIDs) as text a person or a caller gives:
// one pattern for every place that tells an id from other search text or a wallet's id, and one
// schema that reads an id given in a path, a query or a form.
import { z } from 'zod';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `text` is a UUID (any version, either case). */
export const isUuid = (text: string): boolean => uuidPattern.test(text);

/**
 * An id a caller gives (a path, a query, a form): a UUID in either case, read in lower case, as PostgreSQL stores and
 * prints it. PostgreSQL compares UUIDs whatever their case, but an id is a text key too: the context a link's tokens
 * are sealed under, a batch runner's workflow id, a funding's hold reference. An upper-case id found the row and then
 * missed its key (a 500 for a link's profile, a second batch runner under another workflow id, a resolved funding
 * whose hold stayed open).
 */
export const idSchema = z.uuid().overwrite((id) => id.toLowerCase());
