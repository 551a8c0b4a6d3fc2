/**
 * The buyer SDK: discovery, resource reads, settlements and receipts over the marketplace API, typed from the
 * buyer bundle of the spec (src/generated). Payment helpers are added on top of this client.
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';

export type { paths, components, operations } from './generated/openapi.js';

export interface BuyerClientOptions {
  baseUrl: string;
  /** Optional: buyers use the public operations without a key. */
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
}

export type BuyerClient = Client<paths>;

export function createBuyerClient(options: BuyerClientOptions): BuyerClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  if (options.apiKey) client.use(bearerAuth(options.apiKey));
  return client;
}

function bearerAuth(apiKey: string): Middleware {
  return {
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${apiKey}`);
      return request;
    },
  };
}
