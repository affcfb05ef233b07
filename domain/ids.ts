// walletflow's ids (fundings, payments, links, batches: UUIDs) as text a person or a caller gives:
// one pattern for every place that tells an id from other search text or a wallet's id.
const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `text` is a UUID (any version, either case). */
export const isUuid = (text: string): boolean => uuidPattern.test(text);
