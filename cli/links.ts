// `walletflow links get|find|profile|unlink|login-url`: users' wallet links through the ops API.
// Never a token: the API does not give one. `profile` prints the wallet's profile as fetched now.
import type { Link } from '../client/ops-client.generated.ts';
import { CliInputError, exitCodes } from './exit-codes.ts';
import { printJson, printText, runOps, table, type OpsCommandOptions } from './output.ts';

export function formatLink(link: Link): string {
  return table([
    ['link', link.linkId],
    ['status', link.status],
    ['kind', link.kind],
    ['partner user', link.partnerUserId],
    ['profile', link.profileId],
    ['wallet user', link.maskedUserId ?? '-'],
    ['scopes', link.scopes.join(' ')],
    ['access token expires', link.tokens?.accessTokenExpiresAt ?? '-'],
    ['refresh token expires', link.tokens?.refreshTokenExpiresAt ?? '-'],
    ['created', link.createdAt],
    ['updated', link.updatedAt],
  ]);
}

const show = (options: OpsCommandOptions, link: Link) =>
  options.output === 'json' ? printJson(link) : printText(formatLink(link));

export const runLinksGet = (linkId: string, options: OpsCommandOptions) =>
  runOps('links get', options, async (client) => show(options, (await client.getLink({ linkId })).body));

export const runLinksUnlink = (linkId: string, options: OpsCommandOptions) =>
  runOps('links unlink', options, async (client) => show(options, (await client.unlink({ linkId })).body));

export const runLinksFind = (options: OpsCommandOptions & { partnerUserId?: string; profileId?: string }) =>
  runOps('links find', options, async (client) => {
    if ((options.partnerUserId === undefined) === (options.profileId === undefined)) {
      throw new CliInputError('give exactly one of --partner-user-id and --profile-id', exitCodes.usage);
    }
    const { body } = await client.findLinks(
      options.partnerUserId !== undefined
        ? { partnerUserId: options.partnerUserId }
        : { profileId: options.profileId! },
    );
    if (options.output === 'json') return printJson(body);
    printText(
      table([
        ['LINK', 'STATUS', 'KIND', 'PARTNER USER', 'PROFILE', 'CREATED'],
        ...body.items.map((link) => [
          link.linkId,
          link.status,
          link.kind,
          link.partnerUserId,
          link.profileId,
          link.createdAt,
        ]),
      ]),
    );
  });

export const runLinksProfile = (linkId: string, options: OpsCommandOptions) =>
  runOps('links profile', options, async (client) => {
    const { body } = await client.getLinkProfile({ linkId });
    if (options.output === 'json') return printJson(body);
    printText(
      `${table([
        ['link', body.linkId],
        ['fetched', body.fetchedAt],
        ['scopes', body.scopes.join(' ')],
        ['request reference', body.requestReferenceNo],
      ])}\n\n${JSON.stringify(body.profile, null, 2)}`,
    );
  });

export const runLinksLoginUrl = (partnerUserId: string, options: OpsCommandOptions & { mobile?: string }) =>
  runOps('links login-url', options, async (client) => {
    const { body } = await client.createLoginUrl({
      body: { partnerUserId, ...(options.mobile ? { mobile: options.mobile } : {}) },
    });
    if (options.output === 'json') return printJson(body);
    printText(
      table([
        ['url', body.url],
        ['expires', body.expiresAt],
      ]),
    );
  });
