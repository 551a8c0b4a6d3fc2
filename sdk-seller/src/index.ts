/**
 * The seller SDK: sellers, resources, domain verification, cataloging, payments, settlements and receipts over the
 * marketplace API, typed from the seller bundle of the spec (src/generated).
 */
import createClient, { type Client, type Middleware } from 'openapi-fetch';
import type { paths } from './generated/openapi.js';

export type { paths, components, operations } from './generated/openapi.js';

export interface SellerClientOptions {
  baseUrl: string;
  /** The seller's API key (returned once by createSeller). */
  apiKey: string;
  fetch?: typeof globalThis.fetch;
}

export type SellerClient = Client<paths>;

export function createSellerClient(options: SellerClientOptions): SellerClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  client.use(bearerAuth(options.apiKey));
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
