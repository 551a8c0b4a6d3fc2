/**
 * The seller's own API: a small Express app whose route is charged for with the seller SDK's `paywall`. The
 * paywall answers 402 with the price, verifies a payment with the marketplace (POST /v1/verify) BEFORE the handler
 * runs, and settles it (POST /v1/settle) before the response is released. It is given a client with a
 * payments-scoped key (verify, settle, reading the seller's own payments), never the seller's admin key.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { paywall, type SellerClient } from '@paid-api-marketplace/sdk-seller';

export interface SellerApp {
  port: number;
  /** Puts GET /v1/forecast/:city behind the paywall of the cataloged resource. */
  sell(resourceId: string): void;
  close(): Promise<void>;
}

export async function startSellerApp(paywallClient: SellerClient): Promise<SellerApp> {
  const app = express();
  const server: Server = await new Promise((resolve) => {
    // QUICKSTART_SELLER_PORT: where the quickstart's seller listens on 127.0.0.1 (default 0: any free port).
    const s = app.listen(Number(process.env.QUICKSTART_SELLER_PORT ?? 0), '127.0.0.1', () => resolve(s));
  });
  return {
    port: (server.address() as AddressInfo).port,
    sell(resourceId) {
      app.get(
        '/v1/forecast/:city',
        paywall({ client: paywallClient, resourceId, description: 'Hourly forecast' }),
        (req, res) => {
          res.json({ city: req.params.city, temperatureC: 21.5, forecast: 'sunny' });
        },
      );
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
