/**
 * `npm run quickstart`: a first paid call on the local network, as a seller, a buyer and an agent, against a running
 * `npm start` (MARKETPLACE_URL, default http://127.0.0.1:3000). Every step prints what it does and which API call it
 * makes. Everything here is local simulation: no testnet or mainnet is involved.
 *
 * Copy this folder into your own project (it needs @paid-api-marketplace/sdk-seller, @paid-api-marketplace/sdk-buyer,
 * @stellar/stellar-sdk, @modelcontextprotocol/sdk, jose and express) and run it with `npx tsx quickstart.ts`.
 */
import { Keypair } from '@stellar/stellar-sdk';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createSellerClient, checkWalletReadiness, ApiError } from '@paid-api-marketplace/sdk-seller';
import { createBuyerClient, createMarketplaceMcpServer } from '@paid-api-marketplace/sdk-buyer';
import { compactVerify, createLocalJWKSet, type JSONWebKeySet } from 'jose';
import { fundWallet, localDevFetch, step } from './local-dev';
import { startSellerApp } from './seller-app';

const baseUrl = process.env.MARKETPLACE_URL ?? 'http://127.0.0.1:3000';

async function main(): Promise<void> {
  step(0, `Is the marketplace running at ${baseUrl}?`, 'GET /health');
  const health = await fetch(`${baseUrl}/health`).catch(() => null);
  if (!health)
    throw new Error(
      `nothing answers at ${baseUrl}: run \`npm start\` in another terminal first (or set MARKETPLACE_URL)`,
    );
  console.log(`    status: ${((await health.json()) as { status: string }).status}`);

  // ---------------------------------------------------------------- the seller
  const sellerWallet = Keypair.random();
  step(
    1,
    `Fund the seller's wallet ${sellerWallet.publicKey()} (XLM, and a USDC trustline so it can be paid in USDC) ` +
      `and check it can be paid`,
    'local network: GET /friendbot, POST /faucet; checkWalletReadiness: GET /v1/networks, Soroban RPC getLedgerEntries',
  );
  await fundWallet(sellerWallet.publicKey(), '0.0000001');
  const readiness = await checkWalletReadiness({ baseUrl, walletAddress: sellerWallet.publicKey() });
  console.log(
    `    wallet ready to be paid: ${readiness.ready} ` +
      `(${readiness.checks.map((c) => `${c.asset.code} on ${c.network}: ${c.fix ?? 'ok'}`).join('; ')})`,
  );

  const buyerWallet = Keypair.random();
  step(
    2,
    `Fund the buyer's wallet ${buyerWallet.publicKey()} with 10 USDC`,
    'local network: GET /friendbot, POST /faucet',
  );
  await fundWallet(buyerWallet.publicKey(), '10');

  const domain = `weather-${sellerWallet.publicKey().slice(1, 7).toLowerCase()}.test`;
  step(
    3,
    `Sign the seller up (domain ${domain}); the wallet proves it is the seller's by signing a challenge`,
    'sellers.signUp: POST /v1/sellers/challenges, POST /v1/sellers',
  );
  const signup = createSellerClient({ baseUrl });
  const { seller: me, apiKey } = await signup.sellers.signUp({
    displayName: 'Quickstart Weather',
    domain,
    wallet: sellerWallet,
  });
  // The seller's admin API key, shown once: keep it secret. It manages the catalog and the keys; it never goes to
  // the paywall host.
  const seller = signup.withApiKey(apiKey);
  console.log(`    seller ${me.id}, wallet ${me.walletAddress}, admin API key ${apiKey.slice(0, 11)}... (shown once)`);

  step(
    4,
    "Create a payments-scoped API key for the paywall: it may verify, settle and read this seller's payments, " +
      'nothing else',
    `keys.create: POST /v1/sellers/${me.id}/keys {"name":"quickstart paywall","scope":"payments"}`,
  );
  // paymentsKey.secret is shown once
  const paymentsKey = await seller.keys.create(me.id, { name: 'quickstart paywall', scope: 'payments' });
  const paywallClient = createSellerClient({ baseUrl, apiKey: paymentsKey.secret });
  console.log(
    `    key ${paymentsKey.id}, scope ${paymentsKey.scope}, ${paymentsKey.prefix}... (shown once; rotate with ` +
      `keys.create, then keys.revoke)`,
  );

  step(
    5,
    "Start the seller's own API (Express) on 127.0.0.1; its paywall holds only the payments key",
    'none (your server)',
  );
  const shop = await startSellerApp(paywallClient);
  const url = `http://${domain}:${shop.port}/v1/forecast/{city}`;
  console.log(`    listening on 127.0.0.1:${shop.port}; cataloged as ${url}`);

  const networks = await seller.networks.list();
  const usdc = networks.items.find((n) => n.network === 'stellar:testnet')!.assets.find((a) => a.code === 'USDC')!;
  const draft = {
    type: 'http' as const,
    name: 'Quickstart forecast',
    description: 'Hourly weather forecast for a city, paid per call in USDC',
    url,
    routeTemplate: '/v1/forecast/{city}',
    network: 'stellar:testnet' as const,
    payTo: me.walletAddress,
    assetCode: 'USDC',
    assetIssuer: usdc.issuer,
    amount: '0.01',
    inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    outputSchema: { type: 'object', properties: { city: { type: 'string' }, temperatureC: { type: 'number' } } },
    extensions: { bazaar: { discoverable: true } },
  };
  step(
    6,
    'Check the listing against the catalog rules (nothing is written)',
    'catalog.validate: POST /v1/discovery/validate',
  );
  const validation = await seller.catalog.validate({ sellerId: me.id, resource: draft });
  console.log(
    `    ok: ${validation.ok}, errors: ${JSON.stringify(validation.errors)}, warnings: ` +
      `${JSON.stringify(validation.warnings ?? [])}`,
  );

  step(
    7,
    'Catalog it: it becomes a resource and is indexed for search; the payments key may not change it',
    'catalog.catalog: POST /v1/discovery/catalog (admin key); resources.update: PATCH /v1/resources/{id} ' +
      '(payments key: 403)',
  );
  const cataloged = await seller.catalog.catalog({ sellerId: me.id, resource: draft });
  console.log(`    resource ${cataloged.resourceId}`);
  const refused = await paywallClient.resources
    .update(cataloged.resourceId, { amount: '0.0001' })
    .catch((err: unknown) => err);
  console.log(
    `    the paywall's payments key may not change it (PATCH /v1/resources/${cataloged.resourceId}): ` +
      `${refused instanceof ApiError ? `${refused.status} ${refused.code}` : 'allowed'}`,
  );
  shop.sell(cataloged.resourceId);

  try {
    // ---------------------------------------------------------------- the buyer
    const buyer = createBuyerClient({
      baseUrl,
      fetch: localDevFetch, // only because the seller's domain is a local *.test name
      payment: { signer: buyerWallet, budget: { perCall: '0.05', total: '1' } },
    });
    step(
      8,
      'The buyer searches for it (indexing runs in the background: retried for up to 60 s)',
      'discovery.search: GET /v1/discovery/search?q=quickstart forecast',
    );
    const found = await waitFor(async () =>
      (await buyer.discovery.search({ q: 'quickstart forecast' })).resources.find((r) => r.id === cataloged.resourceId),
    );
    console.log(
      `    found "${found.name}": ${found.amount} ${found.assetCode} on ${found.network}, pay to ${found.payTo}`,
    );

    const target = found.url.replace('{city}', 'Lisbon');
    step(9, `Without payment the endpoint answers 402 with its price`, `GET ${target}`);
    const unpaid = await localDevFetch(target);
    console.log(
      `    HTTP ${unpaid.status}, PAYMENT-REQUIRED header: ` +
        `${unpaid.headers.get('payment-required') ? 'present' : 'missing'}`,
    );

    step(
      10,
      'Pay and fetch: sign a USDC transfer for exactly the price, send it, get the data',
      `buyer.payAndFetch: GET ${target} (402), then again with PAYMENT-SIGNATURE; the paywall calls POST ` +
        `/v1/verify and POST /v1/settle`,
    );
    const { response, paid, receipt } = await buyer.payAndFetch(target);
    console.log(`    HTTP ${response.status}, paid: ${paid}, response: ${JSON.stringify(await response.json())}`);
    console.log(
      `    PAYMENT-RESPONSE: transaction ${receipt?.transactionHash}, receipt ${receipt?.receiptId}, status ` +
        `${String(receipt?.status)}`,
    );
    if (!paid || !receipt?.receiptId) throw new Error('the payment did not settle');

    step(11, 'Read the receipt', `buyer.receipts.get: GET /v1/receipts/${receipt.receiptId}`);
    const stored = await buyer.receipts.get(receipt.receiptId);
    console.log(`    ${JSON.stringify(stored)}`);

    step(
      12,
      "Verify the facilitator's signed attestation offline (nothing trusted but its public keys)",
      'GET /.well-known/jwks.json, then an EdDSA JWS check locally (jose)',
    );
    const sellerView = (await seller.receipts.get(receipt.receiptId)) as Record<string, unknown>;
    const jws = (receipt.attestation ??
      sellerView.attestation ??
      receipt.signedReceipt ??
      sellerView.signedReceipt) as string;
    const jwks = (await (await fetch(`${baseUrl}/.well-known/jwks.json`)).json()) as JSONWebKeySet;
    const signed = await compactVerify(jws, createLocalJWKSet(jwks), { algorithms: ['EdDSA'] });
    const claims = JSON.parse(new TextDecoder().decode(signed.payload)) as { transaction?: string };
    const offlineValid = claims.transaction === receipt.transactionHash;
    console.log(
      `    valid: ${offlineValid}, key ${signed.protectedHeader.kid}, signed payload: ${JSON.stringify(claims)}`,
    );

    step(
      13,
      'Verify it on the ledger: the transaction exists and succeeded',
      'buyer.receipts.verifyOnLedger: Soroban RPC getTransaction',
    );
    const onLedger = await buyer.receipts.verifyOnLedger(stored);
    console.log(`    ${JSON.stringify(onLedger)}`);
    if (!offlineValid || !onLedger.ok) throw new Error('the receipt did not verify');

    // ---------------------------------------------------------------- the agent (MCP)
    // localDevDomains only because this seller is a local *.test name on this machine (the service's LOCAL_DEV_DOMAINS
    // switch): by default call_paid_resource refuses *.test names and loopback, private and link-local addresses.
    step(
      14,
      "The same as an agent: the marketplace's MCP tools, with the buyer's wallet and budget",
      'MCP tools/call search_resources (GET /v1/discovery/search)',
    );
    const mcpServer = createMarketplaceMcpServer({
      marketplace: buyer,
      payer: buyer,
      perCallLimit: '0.05',
      localDevDomains: true,
    });
    const agent = new Client({ name: 'quickstart-agent', version: '1.0.0' });
    const [agentSide, serverSide] = InMemoryTransport.createLinkedPair();
    await Promise.all([mcpServer.connect(serverSide), agent.connect(agentSide)]);
    const search = await agent.callTool({ name: 'search_resources', arguments: { q: 'quickstart forecast' } });
    const hits = (search.structuredContent as { resources: Array<{ id: string; name: string }> }).resources;
    console.log(`    ${hits.length} result(s); first: ${hits[0]?.name} (${hits[0]?.id})`);

    step(
      15,
      'The agent pays for one call',
      'MCP tools/call call_paid_resource {resourceId, pathParams: {city: "Porto"}} (pays as in step 10)',
    );
    const call = await agent.callTool({
      name: 'call_paid_resource',
      arguments: { resourceId: cataloged.resourceId, pathParams: { city: 'Porto' } },
    });
    if (call.isError) throw new Error(`call_paid_resource failed: ${JSON.stringify(call.structuredContent)}`);
    const out = call.structuredContent as {
      paid: boolean;
      result: unknown;
      receipt: { id: string; transactionHash: string; status: string };
    };
    console.log(`    paid: ${out.paid}, result: ${JSON.stringify(out.result)}`);
    console.log(`    receipt ${out.receipt.id} (${out.receipt.status}), transaction ${out.receipt.transactionHash}`);

    step(16, "Verify the agent's receipt on the ledger", 'MCP tools/call get_receipt, then Soroban RPC getTransaction');
    const agentReceipt = await agent.callTool({ name: 'get_receipt', arguments: { receiptId: out.receipt.id } });
    const agentCheck = await buyer.receipts.verifyOnLedger(
      agentReceipt.structuredContent as { transactionHash: string; ledger?: number | null },
    );
    console.log(`    ${JSON.stringify(agentCheck)}`);
    await agent.close();
    if (!agentCheck.ok) throw new Error("the agent's receipt did not verify");

    console.log(`\nDone: the buyer spent ${buyer.spent} USDC. Everything above is local simulation.`);
  } finally {
    await shop.close();
  }
}

async function waitFor<T>(fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error('not found in time');
    await new Promise((r) => setTimeout(r, 500));
  }
}

main().catch((err: unknown) => {
  if (err instanceof ApiError)
    console.error(
      `\nquickstart failed: ${err.status} ${err.code}: ${err.message} ${JSON.stringify(err.details ?? '')}`,
    );
  else console.error(`\nquickstart failed: ${(err as Error).message}`);
  process.exit(1);
});
