// Typed keys of walletflow's custom search attributes (names in domain/search-attributes.ts).
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { searchAttributes } from '../domain/search-attributes.ts';

export const statusKey = defineSearchAttributeKey(searchAttributes.status.name, SearchAttributeType.KEYWORD);
export const kindKey = defineSearchAttributeKey(searchAttributes.kind.name, SearchAttributeType.KEYWORD);
export const recipientTypeKey = defineSearchAttributeKey(
  searchAttributes.recipientType.name,
  SearchAttributeType.KEYWORD,
);
